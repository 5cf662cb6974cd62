// Package zipkinaddr repairs the endpoint addresses of Zipkin spans. Some real exports carry
// IPv4 addresses with leading zeros ("52.0.0.04"), which Go's net.ParseIP (and so the
// collector's zipkin receiver and translator) refuses, failing the whole span or request.
package zipkinaddr

import "strings"

// CanonicalIPv4 returns a dotted-quad address without leading zeros in its parts
// ("52.0.0.04" becomes "52.0.0.4"); anything that is not four dot-separated parts is returned
// as it is.
func CanonicalIPv4(ip string) string {
	parts := strings.Split(ip, ".")
	if len(parts) != 4 {
		return ip
	}
	for i, p := range parts {
		q := strings.TrimLeft(p, "0")
		if q == "" {
			q = "0"
		}
		parts[i] = q
	}
	return strings.Join(parts, ".")
}
