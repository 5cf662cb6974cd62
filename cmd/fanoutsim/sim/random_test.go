package sim

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestBackoffBounds(t *testing.T) {
	base, maxD := 500*time.Millisecond, 8*time.Second
	for _, jitter := range []float64{0, 0.25, 0.5, 1} {
		for n := 1; n <= 12; n++ {
			d := base << (n - 1)
			if d > maxD {
				d = maxD
			}
			lo := time.Duration(float64(d) * (1 - jitter))
			for _, u := range []float64{0, 0.1, 0.5, 0.999999} {
				got := Backoff(n, base, maxD, jitter, u)
				if got < lo || got > d {
					t.Errorf("Backoff(n=%d, jitter=%v, u=%v) = %s, want in [%s, %s]", n, jitter, u, got, lo, d)
				}
			}
			if got := Backoff(n, base, maxD, jitter, 0); got != d {
				t.Errorf("Backoff(n=%d, u=0) = %s, want the full %s", n, got, d)
			}
		}
	}
	// Exponential before the cap.
	if got := Backoff(3, base, maxD, 0, 0.7); got != 2*time.Second {
		t.Errorf("Backoff(3) = %s, want 2s", got)
	}
	// Huge attempt numbers neither overflow nor exceed the cap; out-of-range inputs are clamped.
	for _, n := range []int{0, -3, 63, 64, 1000} {
		if got := Backoff(n, base, maxD, 1.5, 7); got < 0 || got > maxD {
			t.Errorf("Backoff(%d) = %s", n, got)
		}
	}
	// Equal jitter spreads the waits over the upper half.
	var sum time.Duration
	const k = 1000
	for i := range k {
		sum += Backoff(2, base, maxD, 0.5, unitFor(1, "b", i))
	}
	if mean := sum / k; mean < 700*time.Millisecond || mean > 800*time.Millisecond {
		t.Errorf("mean equal-jitter wait = %s, want about 750ms", mean)
	}
}

func TestPatience(t *testing.T) {
	mean := 4 * time.Second
	for _, dist := range []string{"lognormal", "exponential"} {
		r := rngFor(3, dist)
		var sum float64
		const k = 40000
		for range k {
			p := Patience(dist, mean, 0.6, r)
			if p < time.Millisecond || p > 50*mean {
				t.Fatalf("%s: patience %s out of bounds", dist, p)
			}
			sum += p.Seconds()
		}
		if got := sum / k; math.Abs(got-4) > 0.2 {
			t.Errorf("%s: mean patience %.3fs, want about 4s", dist, got)
		}
	}
	if p := Patience("fixed", mean, 0, rngFor(1)); p != mean {
		t.Errorf("fixed patience = %s", p)
	}
	// Same seed, same users.
	a, b := rngFor(9, "arrivals"), rngFor(9, "arrivals")
	for range 100 {
		if Patience("lognormal", mean, 0.6, a) != Patience("lognormal", mean, 0.6, b) {
			t.Fatal("patience is not reproducible")
		}
	}
}

func TestKeys(t *testing.T) {
	k := keyFor(1, "agent", 3, "planner")
	if k != keyFor(1, "agent", 3, "planner") || k == keyFor(2, "agent", 3, "planner") || k == keyFor(1, "agent", 4, "planner") {
		t.Errorf("keys not a function of seed and parts: %s", k)
	}
	if len(k) != 36 || strings.Count(k, "-") != 4 || k[14] != '4' {
		t.Errorf("key %q is not a UUID v4", k)
	}
}

func TestValidate(t *testing.T) {
	if err := DefaultOptions().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	bad := DefaultOptions()
	bad.Mode = "sometimes"
	bad.Rate = 0
	bad.MaxAttempts = 0
	bad.PatienceDist = "uniform"
	bad.TimeScale = -1
	bad.OTLPProtocol = "udp"
	err := bad.Validate()
	if err == nil {
		t.Fatal("bad options accepted")
	}
	for _, want := range []string{"mode", "rate", "max-attempts", "patience-dist", "time-scale", "otlp-protocol"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
	unbounded := DefaultOptions()
	unbounded.Duration, unbounded.Requests = 0, 0
	if unbounded.Validate() == nil {
		t.Error("a run bounded by nothing accepted")
	}
}

func TestDrainTimeoutCoversBlindWork(t *testing.T) {
	o := DefaultOptions()
	// 5 attempts at up to 300 ms, backoffs 0.5+1+2+4 s, a model call of up to 2.1 s, after a
	// request of up to 15 s.
	if d := o.drainTimeout(); d < 15*time.Second+7500*time.Millisecond+2100*time.Millisecond {
		t.Errorf("drain timeout %s too short", d)
	}
	o.TimeScale = 0.1
	if d := o.drainTimeout(); d > 5*time.Second {
		t.Errorf("scaled drain timeout %s too long", d)
	}
}

// TestWireKeys: two runs with one seed send different idempotency keys for the same request
// (so one collector does not join their runs), and each service reads back the seeded key its
// behaviour is derived from.
func TestWireKeys(t *testing.T) {
	k := keyFor(42, "agent", 7, "planner")
	a := &sim{tel: &telemetry{runID: keyFor(1, "instance")}}
	b := &sim{tel: &telemetry{runID: keyFor(2, "instance")}}
	if a.wireKey(k) == b.wireKey(k) {
		t.Fatalf("two runs send the same key %q", a.wireKey(k))
	}
	for _, s := range []*sim{a, b} {
		if got := seededKey(s.wireKey(k)); got != k {
			t.Errorf("seededKey(%q) = %q, want %q", s.wireKey(k), got, k)
		}
	}
}
