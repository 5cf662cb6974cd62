package orphankeysextension

import (
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
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.opentelemetry.io/collector/config/configtls"

	"github.com/orphanwatch/orphanwatch/internal/verdict"
)

// selfSigned returns a server certificate for 127.0.0.1 and the path of its PEM file (the CA a
// client trusts).
func selfSigned(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "kfake"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, path
}

// The client speaks TLS (configtls, as the kafka receiver's) to a broker that requires it; a
// plaintext client reads nothing from it.
func TestTLS(t *testing.T) {
	cert, ca := selfSigned(t)
	c := cluster(t, kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}))
	for _, withTLS := range []bool{true, false} {
		m, err := startKeys(t, c, func(cfg *Config) {
			cfg.Topic.CheckTimeout = 2 * time.Second
			if withTLS {
				cfg.TLS = &configtls.ClientConfig{Config: configtls.Config{CAFile: ca}}
			}
		})
		require.NoError(t, err)
		r := verdict.RootRef{Gone: 1, Service: "gateway", Trace: verdict.TraceID{3}, Root: verdict.SpanID{3}}
		m.Publish(43, r)
		if withTLS {
			require.Eventually(t, func() bool { got, ok := m.Lookup(43, nil); return ok && got == r }, 10*time.Second, 10*time.Millisecond)
		} else {
			time.Sleep(500 * time.Millisecond)
			_, ok := m.Lookup(43, nil)
			assert.False(t, ok, "a plaintext client reads nothing from a TLS broker")
		}
	}
}
