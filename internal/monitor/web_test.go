package monitor

import (
	"testing"

	"github.com/mure-dev/mure/internal/webbuild"
)

// TestWebBuildMatches rebuilds the dashboard's assets from their sources
// and the lockfile (scripts/web-build.sh) and checks that the committed
// build, embedded in the binary, is exactly that.
func TestWebBuildMatches(t *testing.T) {
	webbuild.Check(t, "../../scripts/web-build.sh", "web")
}
