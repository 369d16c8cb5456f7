//go:build linux

package systest

import (
	"os"
	"testing"

	"github.com/mure-dev/mure/internal/testcluster"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testcluster.RemoveBinary()
	os.Exit(code)
}
