package keyshare

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

func newSharer(t *testing.T, wait time.Duration) (*Sharer, *sdkmetric.ManualReader) {
	t.Helper()
	rd := sdkmetric.NewManualReader()
	set := componenttest.NewNopTelemetrySettings()
	set.MeterProvider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))
	s, err := New(Config{Topic: "k", Secret: []byte("0123456789abcdef"), Wait: wait, MaxRecords: 4, MaxWaiting: 4}, set)
	if err != nil {
		t.Fatal(err)
	}
	c, err := verdict.New(verdict.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	s.Attach(c)
	return s, rd
}

func lookups(t *testing.T, rd *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := rd.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != "otelcol_processor_orphan_key_lookups" {
				continue
			}
			for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
				v, _ := dp.Attributes.Value("outcome")
				out[v.AsString()] += dp.Value
			}
		}
	}
	return out
}

// The keyed hash depends on the secret (nobody without it can hash guessed keys to compare),
// is not the FNV-1a hash, and is never 0.
func TestHashIsKeyed(t *testing.T) {
	a, _ := newSharer(t, 0)
	b, err := New(Config{Secret: []byte("another secret!!"), MaxRecords: 1, MaxWaiting: 1}, componenttest.NewNopTelemetrySettings())
	if err != nil {
		t.Fatal(err)
	}
	if a.Hash("K") == b.Hash("K") || a.Hash("K") != a.Hash("K") || a.Hash("K") == a.Hash("L") || a.Hash("") == 0 {
		t.Fatal("hash is not a keyed function of the key")
	}
}

func TestRecordRoundTrip(t *testing.T) {
	ref := verdict.RootRef{Gone: 1767225601000000000, Service: "gateway", Reason: verdict.EndReasonCancelled}
	k, v := encode(42, ref)
	h, got, ok := decode(k, v)
	if !ok || h != 42 || got != ref {
		t.Fatalf("decode(encode) = %d %+v %v", h, got, ok)
	}
	for _, bad := range [][]byte{nil, v[:5], append([]byte{9}, v[1:]...), append(v[:len(v):len(v)], 'x')} {
		if _, _, ok := decode(k, bad); ok {
			t.Errorf("decoded a malformed value %x", bad)
		}
	}
}

func TestTableBounded(t *testing.T) {
	s, _ := newSharer(t, 0)
	for i := range 100 {
		s.put(uint64(i+1), verdict.RootRef{Gone: int64(i)})
	}
	if len(s.table) != 4 || s.evicted != 96 {
		t.Fatalf("table %d, evicted %d", len(s.table), s.evicted)
	}
	if _, ok := s.Lookup(100); !ok {
		t.Fatal("newest record evicted")
	}
}

type item struct{ id verdict.TraceID }

// The gate holds a trace whose key binds nowhere, releases it when a record arrives (remote),
// decides another after the wait (missed), and counts the record that comes after it (late).
func TestGate(t *testing.T) {
	s, rd := newSharer(t, 300*time.Millisecond)
	var mu sync.Mutex
	var released []*item
	var g *Gate[*item]
	// The release function stands for the processor's: it passes the traces through Hold again,
	// which lets them through.
	g = NewGate(s, func(i *item) verdict.TraceID { return i.id }, func(r []*item) {
		mu.Lock()
		released = append(released, g.Hold(r)...)
		mu.Unlock()
	})
	a, b, c := &item{verdict.TraceID{1}}, &item{verdict.TraceID{2}}, &item{verdict.TraceID{3}}
	s.Carried(b.id, 7)
	s.Carried(c.id, 8)
	got := g.Hold([]*item{a, b, c})
	if len(got) != 1 || got[0] != a {
		t.Fatalf("Hold passed %v, want only the trace without keys", got)
	}
	if s.put(7, verdict.RootRef{Gone: 1, Service: "gateway"}) {
		t.Fatal("late before any miss")
	}
	s.updated <- struct{}{}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(released)
		mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	if len(released) != 2 || released[0] != b || released[1] != c {
		t.Fatalf("released %v, want b then c", released)
	}
	mu.Unlock()
	if !s.put(8, verdict.RootRef{Gone: 2}) {
		t.Fatal("a record for a missed key is not late")
	}
	g.Close()
	if got, want := lookups(t, rd), (map[string]int64{"remote": 1, "missed": 1}); got["remote"] != want["remote"] || got["missed"] != want["missed"] {
		t.Fatalf("lookups %v, want %v", got, want)
	}
}
