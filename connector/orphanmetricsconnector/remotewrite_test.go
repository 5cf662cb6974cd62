package orphanmetricsconnector_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/golang/snappy"
	"github.com/open-telemetry/opentelemetry-collector-contrib/exporter/prometheusremotewriteexporter"
	"github.com/prometheus/prometheus/prompb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/orphanwatch/orphanwatch/connector/orphanmetricsconnector"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
)

// remoteWriteSink is a Prometheus remote-write endpoint on 127.0.0.1 keeping the last sample
// of every series it receives, keyed as flatten keys them (labels sorted), with the labels
// drop reports left out.
type remoteWriteSink struct {
	mu     sync.Mutex
	series map[string]float64
	names  map[string]bool
	err    error
}

func (s *remoteWriteSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err == nil {
		b, err = snappy.Decode(nil, b)
	}
	var req prompb.WriteRequest
	if err == nil {
		err = req.Unmarshal(b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = err
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	for _, ts := range req.Timeseries {
		var name string
		var labels []string
		for _, l := range ts.Labels {
			switch {
			case l.Name == "__name__":
				name = l.Value
			case prometheusLabel(l.Name):
			default:
				labels = append(labels, l.Name+"="+strconvQuote(l.Value))
			}
		}
		s.names[name] = true
		if name == "target_info" || len(ts.Samples) == 0 {
			continue
		}
		sort.Strings(labels)
		s.series[name+"{"+strings.Join(labels, ",")+"}"] = ts.Samples[len(ts.Samples)-1].Value
	}
	w.WriteHeader(http.StatusNoContent)
}

// TestScenariosThroughRemoteWrite pushes every scenario's series with contrib's
// prometheusremotewrite exporter (v0.165.1, its defaults: metric suffixes on) to a remote-write
// endpoint on 127.0.0.1: the series written are the orphanmetrics exporter's, name, labels and
// value, buckets and health counters included (job, instance and otel_scope_* aside).
func TestScenariosThroughRemoteWrite(t *testing.T) {
	for _, sc := range scenarios.All() {
		t.Run(sc.ID, func(t *testing.T) {
			judged := judgeScenario(t, sc)
			want := map[string]float64{}
			for k, v := range exporterSeries(t, judged) {
				want[k] = v.value
			}

			sink := &remoteWriteSink{series: map[string]float64{}, names: map[string]bool{}}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			srv := &http.Server{Handler: sink}
			go func() { _ = srv.Serve(ln) }()
			t.Cleanup(func() { _ = srv.Close() })

			f := prometheusremotewriteexporter.NewFactory()
			cfg := f.CreateDefaultConfig().(*prometheusremotewriteexporter.Config)
			cfg.HTTP.Endpoint = "http://" + ln.Addr().String() + "/api/v1/push"
			exp, err := f.CreateMetrics(context.Background(), exportertest.NewNopSettings(f.Type()), cfg)
			require.NoError(t, err)
			require.NoError(t, exp.Start(context.Background(), componenttest.NewNopHost()))
			runConnector(t, orphanmetricsconnector.NewDefaultConfig(), exp, judged)
			require.NoError(t, exp.Shutdown(context.Background())) // drains its queue

			sink.mu.Lock()
			defer sink.mu.Unlock()
			require.NoError(t, sink.err)
			assert.NotEmpty(t, sink.names)
			got := map[string]float64{}
			for k, v := range sink.series {
				got[k] = v
			}
			assert.Equal(t, want, got)
			t.Logf("%d series written", len(got))
		})
	}
}
