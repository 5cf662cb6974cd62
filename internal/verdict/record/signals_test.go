package record

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Rules of issue 10: the cancellation and deadline names of more languages, classified.
func TestClassifyCancellationTypesOfMoreLanguages(t *testing.T) {
	r := CompileSignals(DefaultConfig())
	for _, c := range []struct {
		typ  string
		want typeClass
	}{
		{"kotlinx.coroutines.JobCancellationException", typeCancel},
		{"kotlin.coroutines.cancellation.CancellationException", typeCancel},
		{"kotlinx.coroutines.StandaloneCoroutineCancellationException", typeCancel}, // a subclass by name
		{"kotlinx.coroutines.TimeoutCancellationException", typeDeadline},           // listed exactly: a deadline
		{"Swift.CancellationError", typeCancel},
		{"CancellationError", typeCancel},
		{"JoinError::Cancelled", typeCancel},
		{"task 12 was cancelled", typeCancel},
		{"tokio::task::JoinError", typeOther}, // a panic or a cancellation: the type alone does not say
		{"asyncio.CancelledError", typeCancel},
		{"System.OperationCanceledException", typeCancel},
		{"context deadline exceeded", typeDeadline},
		{"java.lang.IllegalStateException", typeOther},
		{"ConnectionError", typeOther},
		{"", typeOther},
	} {
		assert.Equal(t, c.want, r.classify(c.typ), c.typ)
	}
}
