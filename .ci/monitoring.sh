#!/usr/bin/env bash
# Installs what the monitoring tests need, if missing: Debian's prometheus (with promtool) and
# prometheus-alertmanager (with amtool). Called by .ci/run; safe to run by hand (as root, or
# with sudo available) and to run again. The packages' services are not started: the tests start
# their own servers on 127.0.0.1 and stop them.
set -euo pipefail

missing=()
command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v prometheus-alertmanager >/dev/null 2>&1 && command -v amtool >/dev/null 2>&1 || missing+=(prometheus-alertmanager)

if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  # policy-rc.d keeps the packages' own services from starting (they would listen on every
  # interface); the tests run their own on loopback.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
    $sudo chmod +x /usr/sbin/policy-rc.d
    trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

echo "== monitoring tools"
prometheus --version 2>&1 | sed -n 1p
promtool --version 2>&1 | sed -n 1p
prometheus-alertmanager --version 2>&1 | sed -n 1p
amtool --version 2>&1 | sed -n 1p
