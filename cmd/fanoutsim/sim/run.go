package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/orphanwatch/orphanwatch/cmd/fanoutsim/truth"
)

// Run runs one simulation: it starts the services on 127.0.0.1, lets users arrive for
// o.Duration (or until o.Requests users came), waits for the work in flight (bounded by
// o.DrainTimeout), stops the servers, flushes and shuts down the TracerProviders, and returns
// the ground truth. Cancelling ctx ends the arrivals early; users in flight then leave.
func Run(ctx context.Context, o Options) (truth.Truth, error) {
	if err := o.Validate(); err != nil {
		return truth.Truth{}, err
	}
	started := time.Now()
	agents := agentNames(o.SubAgents)
	services := append([]string{GatewayService}, agents...)
	services = append(services, ToolService, ModelService)

	book := truth.NewBook()
	tel, err := newTelemetry(ctx, o, book, services)
	if err != nil {
		return truth.Truth{}, fmt.Errorf("telemetry: %w", err)
	}
	s := &sim{o: o, tel: tel, book: book, toolSeen: map[string]int{}}

	var servers []*http.Server
	listen := func(svc string, h http.Handler) (string, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", fmt.Errorf("%s: listen: %w", svc, err)
		}
		srv := &http.Server{
			Handler:           s.flight.wrap(h),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          log.New(io.Discard, "", 0),
		}
		servers = append(servers, srv)
		go func() { _ = srv.Serve(ln) }()
		return "http://" + ln.Addr().String(), nil
	}
	closeAll := func() {
		for _, srv := range servers {
			_ = srv.Close()
		}
	}

	var errs []error
	if s.toolURL, err = listen(ToolService, serve(tel.tp(ToolService), http.MethodPost, "/search", s.awareHandler(http.HandlerFunc(s.tool)))); err != nil {
		errs = append(errs, err)
	}
	if s.modelURL, err = listen(ModelService, serve(tel.tp(ModelService), http.MethodPost, "/v1/chat/completions", s.awareHandler(http.HandlerFunc(s.model)))); err != nil {
		errs = append(errs, err)
	}
	for _, name := range agents {
		a := &agent{name: name, model: o.modelOf(name), client: newClient(tel.tp(name), s.aware())}
		h := s.agentHandler(a)
		a.url, err = listen(name, serve(tel.tp(name), http.MethodPost, "/agent", s.awareHandler(withSpanAttrs(h, agentAttrs(a)))))
		if err != nil {
			errs = append(errs, err)
		}
		s.agents = append(s.agents, a)
	}
	s.gwClient = newClient(tel.tp(GatewayService), s.aware())
	if s.gatewayURL, err = listen(GatewayService, serve(tel.tp(GatewayService), http.MethodPost, "/ask", s.awareHandler(http.HandlerFunc(s.gateway)))); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		closeAll()
		_ = tel.shutdown(context.Background())
		return truth.Truth{}, errors.Join(errs...)
	}
	s.logf("fanoutsim: mode=%s seed=%d gateway=%s agents=%d tool=%s model=%s", o.Mode, o.Seed, s.gatewayURL, len(s.agents), s.toolURL, s.modelURL)

	n := s.users(ctx)
	s.logf("fanoutsim: %d users came; waiting for the work in flight (at most %s)", n, o.drainTimeout().Round(time.Millisecond))

	cut := 0
	if !s.flight.wait(o.drainTimeout()) {
		cut = s.flight.count()
		s.logf("fanoutsim: %d handlers still running after the drain timeout: closing the servers", cut)
	}
	closeAll()
	// Handlers cut off by the closed servers fail their next call at once; their backoff sleeps
	// are bounded by BackoffMax.
	s.flight.wait(o.scale(o.BackoffMax)*time.Duration(o.MaxAttempts) + 2*time.Second)

	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if err := tel.shutdown(sctx); err != nil {
		errs = append(errs, fmt.Errorf("flush: %w", err))
	}

	t := book.Compute(truth.Options{Tolerance: o.Tolerance, Prices: o.Prices})
	t.Mode, t.Seed = string(o.Mode), o.Seed
	t.WallSeconds = time.Since(started).Seconds()
	if cut > 0 {
		t.Incomplete += cut
	}
	if t.Export = tel.export(); t.Export != nil && !t.Export.Complete() {
		errs = append(errs, &SpansLostError{Export: *t.Export})
	}
	return t, errors.Join(errs...)
}

// SpansLostError is Run's error when spans did not reach the collector (dropped by a
// BatchSpanProcessor, in a failed export call, or rejected by the receiver): the truth still
// holds, but the collector's metrics cannot equal it. A comparison with the collector must
// report this, not a verdict mismatch.
type SpansLostError struct {
	Export truth.Export
}

func (e *SpansLostError) Error() string {
	return fmt.Sprintf("%d of %d spans did not reach the collector (%s): its metrics cannot equal the truth",
		e.Export.Lost(), e.Export.Ended, e.Export)
}

func withSpanAttrs(h http.Handler, attrs []attribute.KeyValue) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		trace.SpanFromContext(r.Context()).SetAttributes(attrs...)
		h.ServeHTTP(w, r)
	})
}

func (s *sim) logf(format string, a ...any) {
	if s.o.Log != nil {
		fmt.Fprintf(s.o.Log, format+"\n", a...)
	}
}

// users lets users arrive as a Poisson process of rate o.Rate for o.Duration (at most
// o.Requests of them), each with a patience drawn from the seed, and waits until every one got
// an answer or left. It returns how many came.
func (s *sim) users(ctx context.Context) int {
	o := s.o
	rng := rngFor(o.Seed, "arrivals")
	client := &http.Client{Transport: &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second,
	}}
	defer client.CloseIdleConnections()

	start := time.Now()
	next := start
	var wg sync.WaitGroup
	n := 0
	for {
		if o.Requests > 0 && n >= o.Requests {
			break
		}
		next = next.Add(time.Duration(rng.ExpFloat64() / o.Rate * float64(time.Second)))
		if o.Duration > 0 && next.Sub(start) >= o.Duration {
			break
		}
		patience := Patience(o.PatienceDist, o.scale(o.PatienceMean), o.PatienceSigma, rng)
		if err := sleepCtx(ctx, time.Until(next)); err != nil {
			break
		}
		n++
		id := n
		wg.Go(func() { s.user(ctx, client, id, patience) })
	}
	wg.Wait()
	return n
}

// user sends one request and closes the tab when its patience runs out.
func (s *sim) user(ctx context.Context, client *http.Client, id int, patience time.Duration) {
	uctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	body := []byte(`{"question":"plan, research, code and critique request ` + strconv.Itoa(id) + `"}`)
	req, _ := http.NewRequestWithContext(uctx, http.MethodPost, s.gatewayURL+"/ask", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(headerRequestID, strconv.Itoa(id))
	if s.aware() {
		// The frontend knows its own timeout and sends it along as data.
		req.Header.Set(headerDeadline, truth.FormatUnixSeconds(time.Now().Add(s.o.scale(s.o.RequestTimeout))))
	}
	out := truth.UserOutcome{RequestID: id}
	resp, err := client.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out.Status = resp.StatusCode
	}
	if err != nil {
		out.Status = 0
		if uctx.Err() != nil {
			out.Left = true
		} else {
			out.Err = true
		}
	}
	s.book.User(out)
}
