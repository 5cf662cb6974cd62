package orphanmetricsconnector

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them (the flush loop after
// Shutdown, a server left running).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
