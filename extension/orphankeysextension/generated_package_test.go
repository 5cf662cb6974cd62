package orphankeysextension

import (
	"testing"

	"go.uber.org/goleak"
)

// Written by hand in the shape mdatagen generates.

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
