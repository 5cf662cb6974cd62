package orphanmetrics_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"
	"pgregory.net/rapid"

	"github.com/orphanwatch/orphanwatch/internal/testsupport/scenarios"
	"github.com/orphanwatch/orphanwatch/internal/testsupport/shapegen"
)

// The generated shapes the verdict tests replay too (internal/testsupport/shapegen: loops that
// outlive their parent by seconds to minutes, keyed re-sends after a success, overlapping tries,
// deliveries redelivered after minutes), built as spans: observed as they arrive (in the order
// they end, any split), they give the series of the processor's one decision (annotate).

// shapeBuilder builds generated traces as spans (a shapegen.Builder).
type shapeBuilder struct{ b *scenarios.Builder }

func (sb shapeBuilder) Root(service, name string, start, end float64, status int) *scenarios.Span {
	s := sb.b.NewTrace().Span(service, name, scenarios.Server, start, end).
		Set("http.request.method", "POST").Set("http.response.status_code", status)
	if status >= 500 {
		s.Error(fmt.Sprint(status))
	}
	return s
}

func (sb shapeBuilder) Internal(parent *scenarios.Span, service, name string, start, end float64) *scenarios.Span {
	return parent.Child(service, name, scenarios.Internal, start, end)
}

func (sb shapeBuilder) Call(parent *scenarios.Span, service, host string, start, end float64, status int, cancelled bool) *scenarios.Span {
	s := parent.Child(service, "GET", scenarios.Client, start, end).
		Set("http.request.method", "GET").Set("server.address", host).Set("url.path", "/x")
	switch {
	case cancelled:
		s.Set("error.type", "context canceled").Error("context canceled")
	case status >= 400:
		s.Set("http.response.status_code", status).Error(fmt.Sprint(status))
	default:
		s.Set("http.response.status_code", status)
	}
	return s
}

func (sb shapeBuilder) Key(s *scenarios.Span, shape, n int) {
	s.Set("http.request.header.idempotency-key", fmt.Sprintf("order-%d-%d", shape, n))
}

func (sb shapeBuilder) Producer(parent *scenarios.Span, service, dest string, start, end float64) *scenarios.Span {
	return parent.Child(service, "send "+dest, scenarios.Producer, start, end).
		Set("messaging.operation.type", "send").Set("messaging.destination.name", dest)
}

func (sb shapeBuilder) Delivery(pub *scenarios.Span, service, dest string, shape, n int, start, end float64, failed bool) *scenarios.Span {
	d := sb.b.NewTrace().Span(service, "process "+dest, scenarios.Consumer, start, end).
		Set("messaging.operation.type", "process").Set("messaging.destination.name", dest).
		Set("messaging.message.id", fmt.Sprintf("msg-%d-%d", shape, n)).Link(pub)
	if failed {
		d.Set("error.type", "CommitFailedException").Error("commit failed")
	}
	return d
}

// TestObserveEqualsAnnotateShapes: the generated shapes, observed as their spans end in any
// split (each batch received a second after its last span ended, the observer ticking on that
// clock: traces decided when their wait is over), give the processor's series of one decision.
func TestObserveEqualsAnnotateShapes(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		sb := shapeBuilder{scenarios.NewBuilder(90)}
		shapegen.Draw(rt, sb)
		td := sb.b.Traces()
		want := annotatedSeries(rt, td)
		batches := arrivalSplit(rt, td, true)
		got := observedSeries(rt, batches, zap.NewNop(), false)
		assert.Equal(rt, want, got, "%d spans in %d batches", td.SpanCount(), len(batches))
	})
}
