//go:build linux

package systest

import (
	"net/http"
	"os"
	"testing"

	"github.com/mure-dev/mure/internal/testcluster"
)

func TestMain(m *testing.M) {
	// Nodes authenticate every client request: http.Get and friends carry
	// the admin credential of the test cluster they talk to.
	http.DefaultClient = &http.Client{Transport: testcluster.Authorize(nil)}
	code := m.Run()
	testcluster.RemoveBinary()
	os.Exit(code)
}
