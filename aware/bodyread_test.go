package aware

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The body-read rule of Go's HTTP/1.x server, measured on a real loopback server: the server
// watches the connection for a client disconnect (and then cancels r.Context()) only once the
// request body has been read to EOF; before that, a handler waiting on r.Context() is never
// told that the client left. A request without a body is watched from the start. A write that
// fails (the client is gone) cancels the context too.
func TestHandlerBodyReadRule(t *testing.T) {
	const patience = 1500 * time.Millisecond
	for _, c := range []struct {
		name    string
		method  string
		body    string
		prepare func(w http.ResponseWriter, r *http.Request)
		opts    []HandlerOption
		noticed bool
	}{
		{name: "POST, body not read", method: http.MethodPost, body: strings.Repeat("q", 512), noticed: false},
		{name: "POST, body read to EOF first", method: http.MethodPost, body: strings.Repeat("q", 512),
			prepare: func(_ http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }, noticed: true},
		{name: "POST, body partly read", method: http.MethodPost, body: strings.Repeat("q", 512),
			prepare: func(_ http.ResponseWriter, r *http.Request) { _, _ = io.ReadFull(r.Body, make([]byte, 100)) }, noticed: false},
		{name: "GET, no body", method: http.MethodGet, noticed: true},
		{name: "POST, body not read, Handler WithReadBody", method: http.MethodPost, body: strings.Repeat("q", 512),
			opts: []HandlerOption{WithReadBody(1 << 20)}, noticed: true},
		{name: "POST, body longer than WithReadBody's limit", method: http.MethodPost, body: strings.Repeat("q", 512),
			opts: []HandlerOption{WithReadBody(100)}, noticed: false},
		{name: "POST, body not read, full duplex", method: http.MethodPost, body: strings.Repeat("q", 512),
			prepare: func(w http.ResponseWriter, _ *http.Request) {
				_ = http.NewResponseController(w).EnableFullDuplex()
			}, noticed: false},
	} {
		t.Run(c.name, func(t *testing.T) {
			started := make(chan struct{})
			result := make(chan time.Duration, 1) // how long after the client left; -1: never
			left := make(chan time.Time, 1)
			srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if c.prepare != nil {
					c.prepare(w, r)
				}
				close(started)
				select { // the long work, watching the caller
				case <-r.Context().Done():
					result <- time.Since(<-left)
				case <-time.After(patience):
					result <- -1
				}
			}), c.opts...))
			defer srv.Close()

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			req, err := http.NewRequestWithContext(ctx, c.method, srv.URL, strings.NewReader(c.body))
			require.NoError(t, err)
			req.Header.Set(HeaderDeadline, FormatUnixSeconds(time.Now().Add(time.Minute)))
			done := make(chan struct{})
			go func() {
				defer close(done)
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}()
			<-started
			left <- time.Now()
			cancel() // the client leaves: net/http closes the connection
			<-done
			got := <-result
			t.Logf("noticed after %v (-1: never)", got)
			if c.noticed {
				require.GreaterOrEqual(t, got, time.Duration(0), "the handler noticed the client left")
				assert.Less(t, got, 500*time.Millisecond)
			} else {
				assert.Equal(t, time.Duration(-1), got, "the handler never noticed in %v", patience)
			}
		})
	}
}

// A handler that streams its answer, without reading the body: the first write after the
// client left fails, which cancels r.Context(). http.ResponseController flushes each write.
func TestHandlerNoticesThroughFailedWrite(t *testing.T) {
	started := make(chan struct{})
	result := make(chan bool, 1)
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		close(started)
		deadline := time.After(3 * time.Second)
		for {
			select {
			case <-r.Context().Done():
				result <- true
				return
			case <-deadline:
				result <- false
				return
			case <-time.After(20 * time.Millisecond):
				_, _ = io.WriteString(w, "working\n")
				_ = rc.Flush()
			}
		}
	})))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(strings.Repeat("q", 512)))
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	time.Sleep(50 * time.Millisecond)
	cancel()
	assert.True(t, <-result, "a failed write cancels the request's context")
}

// WithReadBody hands the next handler the whole body, as sent.
func TestHandlerWithReadBodyKeepsTheBody(t *testing.T) {
	for _, limit := range []int64{1, 100, 512, 513, 1 << 20} {
		var got string
		srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, err := io.ReadAll(r.Body)
			assert.NoError(t, err)
			got = string(b)
		}), WithReadBody(limit)))
		body := strings.Repeat("0123456789abcdef", 32)
		resp, err := http.Post(srv.URL, "text/plain", strings.NewReader(body))
		require.NoError(t, err)
		resp.Body.Close()
		srv.Close()
		assert.Equal(t, body, got, "limit %d", limit)
	}
}

// Over HTTP/2 the rule does not apply: the client's stream reset cancels r.Context() whether
// the handler read the body or not.
func TestHandlerHTTP2NoticesWithoutBodyRead(t *testing.T) {
	started := make(chan struct{})
	result := make(chan bool, 1)
	var proto atomic.Int32
	srv := httptest.NewUnstartedServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proto.Store(int32(r.ProtoMajor))
		close(started)
		select {
		case <-r.Context().Done():
			result <- true
		case <-time.After(1500 * time.Millisecond):
			result <- false
		}
	})))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(strings.Repeat("q", 512)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := srv.Client().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-started
	cancel()
	assert.True(t, <-result, "the stream reset cancels the handler's context")
	assert.Equal(t, int32(2), proto.Load(), "served over HTTP/2")
	<-done
}
