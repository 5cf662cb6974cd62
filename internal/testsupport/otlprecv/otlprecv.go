// Package otlprecv starts the collector's OTLP receiver for a test, on a loopback address the
// test chose: the backend a pushing pipeline sends to, or the front door of a pipeline under test.
package otlprecv

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

// StartHTTP creates and starts an OTLP receiver whose OTLP/HTTP endpoint is addr, handing what
// it receives to next: a consumer.Traces or a consumer.Metrics. The caller shuts it down.
func StartHTTP(t testing.TB, addr string, next any) component.Component {
	t.Helper()
	rf := otlpreceiver.NewFactory()
	cfg := rf.CreateDefaultConfig().(*otlpreceiver.Config)
	cfg.Protocols.HTTP.GetOrInsertDefault().ServerConfig.NetAddr.Endpoint = addr
	set := receivertest.NewNopSettings(rf.Type())
	var (
		recv component.Component
		err  error
	)
	switch c := next.(type) {
	case consumer.Traces:
		recv, err = rf.CreateTraces(context.Background(), set, cfg, c)
	case consumer.Metrics:
		recv, err = rf.CreateMetrics(context.Background(), set, cfg, c)
	default:
		t.Fatalf("otlprecv: %T is neither a consumer.Traces nor a consumer.Metrics", next)
	}
	require.NoError(t, err)
	require.NoError(t, recv.Start(context.Background(), componenttest.NewNopHost()))
	return recv
}
