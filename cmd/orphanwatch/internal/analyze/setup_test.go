package analyze

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/orphanwatch/orphanwatch/cmd/orphanwatch/internal/input"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/spanbuild"
	"github.com/orphanwatch/orphanwatch/processor/orphanprocessor"
)

// The analyze tests' shared setup: span builders and a run of the analysis over one input.

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// addSpan appends a span of the shop named POST in its own resource.
func addSpan(td ptrace.Traces, trace, id, parent byte, kind ptrace.SpanKind, start, end float64) ptrace.Span {
	return spanbuild.Add(td, t0, "shop", "POST", trace, id, parent, kind, start, end)
}

// longRequest is trace 1: the shop's root (0-40 s) and its call (0.1-1 s, status 200), which
// ended 39 s before its root, so arrives 30 s before the root does.
func longRequest() ptrace.Traces {
	td := ptrace.NewTraces()
	addSpan(td, 1, 1, 0, ptrace.SpanKindServer, 0, 40)
	call := addSpan(td, 1, 2, 1, ptrace.SpanKindClient, 0.1, 1)
	call.Attributes().PutInt("http.response.status_code", 200)
	return td
}

// run analyzes td, one input, with the default configuration, and lists every span's verdict.
func run(t *testing.T, td ptrace.Traces) *Output {
	t.Helper()
	return runWith(t, nil, td)
}

// runWith is run with cfg (the default when nil).
func runWith(t *testing.T, cfg *orphanprocessor.Config, td ptrace.Traces) *Output {
	t.Helper()
	out, err := Run(context.Background(), cfg, []Input{{Name: "f", Result: &input.Result{Format: "otlp-json", Traces: td, Spans: td.SpanCount()}}})
	require.NoError(t, err)
	out.Report.WithSpanVerdicts()
	return out
}

func verdictOf(t *testing.T, rep *Report, id pcommon.SpanID) SpanVerdict {
	t.Helper()
	for _, tr := range rep.Traces {
		for _, s := range tr.SpanVerdicts {
			if s.SpanID == id.String() {
				return s
			}
		}
	}
	require.Fail(t, "no span", id.String())
	return SpanVerdict{}
}
