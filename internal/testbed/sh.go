package testbed

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// run runs a command and returns its output; a failure's error carries the
// command line and what it printed.
func run(ctx context.Context, name string, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// inNS runs a command inside network namespace ns.
func inNS(ctx context.Context, ns, name string, args ...string) (string, error) {
	return run(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}
