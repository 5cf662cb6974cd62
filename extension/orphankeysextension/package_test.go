package orphankeysextension

import (
	"testing"

	"go.uber.org/goleak"
)

// The goroutine check mdatagen generates for every component package.

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
