// Package httpbody reads what a test's server answers to a GET: the scrapes of the tests that
// read the orphanmetrics exporter's or a collector's metrics over HTTP.
package httpbody

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// Get returns the status code and the body of a GET of url; the test fails when the request
// or the reading of the body does.
func Get(t testing.TB, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b
}
