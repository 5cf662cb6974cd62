package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/orphanwatch/orphanwatch/cmd/fanoutsim/truth"
)

// receiver counts the spans it receives over OTLP, by service.name.
type receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu       sync.Mutex
	services map[string]int
}

func (r *receiver) add(req *collectortrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		svc := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				svc = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			r.services[svc] += len(ss.GetSpans())
		}
	}
}

func (r *receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.add(req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	var m collectortrace.ExportTraceServiceRequest
	if req.URL.Path != "/v1/traces" || proto.Unmarshal(b, &m) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	r.add(&m)
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func startReceiver(t *testing.T, protocol string) (*receiver, string) {
	t.Helper()
	r := &receiver{services: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	switch protocol {
	case "grpc":
		srv := grpc.NewServer()
		collectortrace.RegisterTraceServiceServer(srv, r)
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(srv.Stop)
		return r, ln.Addr().String()
	default:
		srv := &http.Server{Handler: r}
		go func() { _ = srv.Serve(ln) }()
		t.Cleanup(func() { _ = srv.Close() })
		return r, "http://" + ln.Addr().String()
	}
}

func TestCLIExportsOTLPAndWritesTruth(t *testing.T) {
	for _, protocol := range []string{"grpc", "http"} {
		t.Run(protocol, func(t *testing.T) {
			rcv, endpoint := startReceiver(t, protocol)
			file := filepath.Join(t.TempDir(), "truth.json")
			var stdout, stderr bytes.Buffer
			code := run([]string{
				"--mode=blind", "--seed=3", "--time-scale=0.05", "--rate=20", "--duration=1s", "--requests=6",
				"--tool-failure-rate=0.5", "--otlp-protocol=" + protocol, "--otlp-endpoint=" + endpoint,
				"--truth=" + file, "--quiet",
			}, &stdout, &stderr)
			if code != 0 {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String(), "runs by outcome") {
				t.Errorf("no summary:\n%s", stdout.String())
			}
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var tr truth.Truth
			if err := json.Unmarshal(raw, &tr); err != nil {
				t.Fatalf("truth JSON: %v", err)
			}
			if tr.Mode != "blind" || tr.Seed != 3 || tr.Requests != 6 || tr.Incomplete != 0 {
				t.Errorf("truth = %+v", tr)
			}
			for _, key := range []string{`"runs"`, `"delivered_to_nobody"`, `"orphaned"`, `"started_after_gone"`, `"input_tokens"`} {
				if !bytes.Contains(raw, []byte(key)) {
					t.Errorf("truth JSON lacks %s", key)
				}
			}
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			for _, svc := range []string{"gateway", "planner", "researcher", "coder", "critic", "search-tool", "model-provider"} {
				if rcv.services[svc] == 0 {
					t.Errorf("no span of %s received over OTLP/%s (got %v)", svc, protocol, rcv.services)
				}
			}
			// A root and four CLIENT calls per request that reached the gateway (a user may leave
			// before, under load: the truth counts the roots).
			roots := 0
			for _, n := range tr.Roots {
				roots += n
			}
			if roots == 0 || rcv.services["gateway"] < roots*5 {
				t.Logf("stderr: %s", stderr.String())
				t.Errorf("gateway spans received: %d, want 5 for each of the %d roots", rcv.services["gateway"], roots)
			}
		})
	}
}

func TestCLIFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"--help"}, &out, &errb); code != 0 {
		t.Errorf("--help exit %d", code)
	}
	if !strings.Contains(errb.String(), "-tool-failure-rate") || !strings.Contains(errb.String(), "-otlp-protocol") {
		t.Errorf("usage lacks flags:\n%s", errb.String())
	}
	for _, args := range [][]string{
		{"--mode=sometimes"},
		{"--otlp-protocol=udp"},
		{"--models=planner"},
		{"--rate=0"},
		{"extra"},
	} {
		errb.Reset()
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errb.String())
		}
	}
	m := modelsFlag{}
	if err := m.Set("planner=gpt-4o, critic=gpt-4o"); err != nil || m["planner"] != "gpt-4o" || m["critic"] != "gpt-4o" {
		t.Errorf("models flag: %v %v", m, err)
	}
}
