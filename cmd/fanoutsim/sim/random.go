package sim

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"
)

// Every random draw of a simulation is a function of the seed and of names that do not depend
// on goroutine scheduling (the request number, the idempotency key, the attempt number), so two
// runs with the same seed meet the same users, the same tool failures and the same token counts,
// whatever the mode.

// rngFor returns a generator determined by the seed and the parts.
func rngFor(seed uint64, parts ...any) *rand.Rand {
	h1 := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], seed)
	h1.Write(b[:])
	for _, p := range parts {
		fmt.Fprint(h1, "\x00", p)
	}
	a := h1.Sum64()
	return rand.New(rand.NewPCG(a, a^0x9e3779b97f4a7c15))
}

// unitFor returns a number in [0, 1) determined by the seed and the parts.
func unitFor(seed uint64, parts ...any) float64 { return rngFor(seed, parts...).Float64() }

// keyFor returns an idempotency key (UUID v4 form) determined by the seed and the parts.
func keyFor(seed uint64, parts ...any) string {
	r := rngFor(seed, append([]any{"key"}, parts...)...)
	var u [16]byte
	binary.LittleEndian.PutUint64(u[:8], r.Uint64())
	binary.LittleEndian.PutUint64(u[8:], r.Uint64())
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// Backoff returns the wait after failed attempt n (n >= 1) before attempt n+1: base·2^(n-1),
// capped at max, of which the fraction jitter is randomised away by u in [0, 1). The result
// lies in [d·(1-jitter), d] where d is the capped exponential delay; jitter 0.5 is "equal
// jitter", 1 is "full jitter".
func Backoff(n int, base, max time.Duration, jitter, u float64) time.Duration {
	if n < 1 {
		n = 1
	}
	d := max
	if n-1 < 62 {
		if e := base << (n - 1); e > 0 && e>>(n-1) == base && e < max {
			d = e
		}
	}
	jitter = math.Min(math.Max(jitter, 0), 1)
	u = math.Min(math.Max(u, 0), math.Nextafter(1, 0))
	return d - time.Duration(jitter*u*float64(d))
}

// Patience draws how long a user waits: lognormal with the given mean and sigma (of the
// underlying normal), exponential with the mean, or exactly the mean. It is at least 1 ms and
// at most 50 times the mean.
func Patience(dist string, mean time.Duration, sigma float64, r *rand.Rand) time.Duration {
	m := float64(mean)
	var p float64
	switch dist {
	case "exponential":
		p = r.ExpFloat64() * m
	case "fixed":
		p = m
	default: // lognormal: E = exp(mu + sigma²/2)
		mu := math.Log(m) - sigma*sigma/2
		p = math.Exp(mu + sigma*r.NormFloat64())
	}
	p = math.Min(math.Max(p, float64(time.Millisecond)), 50*m)
	return time.Duration(p)
}
