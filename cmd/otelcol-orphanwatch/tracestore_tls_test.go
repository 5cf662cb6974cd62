package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/e2e"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/testpki"
)

// traceStore is an OTLP/gRPC server over mutual TLS: the store the front tier exports to.
type traceStore struct {
	ptraceotlp.UnimplementedGRPCServer
	spans atomic.Int64
}

func (s *traceStore) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	s.spans.Add(int64(req.Traces().SpanCount()))
	return ptraceotlp.NewExportResponse(), nil
}

// TestTraceStoreTLSOverlayConnects: the trace-store exporter as front.yaml +
// trace-store-tls.yaml configure it (resolved with the distribution's providers, the files
// from the environment) exports spans to a loopback OTLP/gRPC server that requires TLS with a
// client certificate, verifying the server's certificate against TRACE_STORE_TLS_CA_FILE for
// TRACE_STORE_TLS_SERVER_NAME.
func TestTraceStoreTLSOverlayConnects(t *testing.T) {
	pki := testpki.New(t)
	serverCert := pki.Issue(t, "tempo.example", x509.ExtKeyUsageServerAuth)
	pki.Issue(t, "front-1", x509.ExtKeyUsageClientAuth)

	store := &traceStore{}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{serverCert}, ClientCAs: pki.Pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12,
	})))
	ptraceotlp.RegisterGRPCServer(srv, store)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(srv.Stop)

	t.Setenv("ORPHANWATCH_MEMBER", "1")
	t.Setenv("ORPHANWATCH_KEY_SECRET", "a-secret-of-at-least-16-bytes")
	t.Setenv("TRACE_STORE_ENDPOINT", l.Addr().String())
	t.Setenv("TRACE_STORE_TLS_CA_FILE", pki.CAFile())
	t.Setenv("TRACE_STORE_TLS_SERVER_NAME", "tempo.example")
	t.Setenv("TRACE_STORE_TLS_CERT_FILE", filepath.Join(pki.Dir, "front-1.pem"))
	t.Setenv("TRACE_STORE_TLS_KEY_FILE", filepath.Join(pki.Dir, "front-1-key.pem"))

	f, err := components()
	require.NoError(t, err)
	typ := component.MustNewType("otlp_grpc")
	fac, ok := f.Exporters[typ]
	require.True(t, ok, "exporter otlp_grpc")
	cfg := fac.CreateDefaultConfig()
	sub := resolved(t, "front.yaml", "trace-store-tls.yaml").Sub("exporters::otlp_grpc/store")
	require.NotNil(t, sub)
	require.NoError(t, confmap.NewFromStringMap(sub).Unmarshal(cfg))

	ctx := context.Background()
	exp, err := fac.CreateTraces(ctx, exportertest.NewNopSettings(typ), cfg)
	require.NoError(t, err)
	require.NoError(t, exp.Start(ctx, componenttest.NewNopHost()))
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	td := ptrace.NewTraces()
	span := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	span.SetName("POST /agent")
	require.NoError(t, exp.ConsumeTraces(ctx, td))
	assert.True(t, e2e.WaitFor(20*time.Second, func() bool { return store.spans.Load() == 1 }),
		"the store got %d spans over mutual TLS", store.spans.Load())
}
