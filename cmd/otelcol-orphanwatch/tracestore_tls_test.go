package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
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
)

// testPKI is a CA and the certificates it signed, written as PEM files.
type testPKI struct {
	dir  string
	ca   *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "trace store test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	p := &testPKI{dir: t.TempDir(), ca: ca, key: key, pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	p.write(t, "ca.pem", "CERTIFICATE", der)
	return p
}

func (p *testPKI) write(t *testing.T, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
	return path
}

// issue signs a certificate for name (a server's DNS name, or a client's common name) and
// returns it loaded, and written as name.pem and name-key.pem.
func (p *testPKI) issue(t *testing.T, name string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		DNSNames: []string{name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	cert, err := tls.LoadX509KeyPair(p.write(t, name+".pem", "CERTIFICATE", der), p.write(t, name+"-key.pem", "EC PRIVATE KEY", kder))
	require.NoError(t, err)
	return cert
}

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
	pki := newTestPKI(t)
	serverCert := pki.issue(t, "tempo.example", x509.ExtKeyUsageServerAuth)
	pki.issue(t, "front-1", x509.ExtKeyUsageClientAuth)

	store := &traceStore{}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{serverCert}, ClientCAs: pki.pool,
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
	t.Setenv("TRACE_STORE_TLS_CA_FILE", filepath.Join(pki.dir, "ca.pem"))
	t.Setenv("TRACE_STORE_TLS_SERVER_NAME", "tempo.example")
	t.Setenv("TRACE_STORE_TLS_CERT_FILE", filepath.Join(pki.dir, "front-1.pem"))
	t.Setenv("TRACE_STORE_TLS_KEY_FILE", filepath.Join(pki.dir, "front-1-key.pem"))

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
