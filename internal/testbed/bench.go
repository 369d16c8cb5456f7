package testbed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mure-dev/mure/internal/bench"
)

// BenchWorker returns a load generator that runs each job inside host h:
// `exe bench-worker`, with the job on its stdin and the report on its
// stdout (exe is a mure binary).
func (tb *Testbed) BenchWorker(h *Host, exe string) bench.Worker {
	return func(ctx context.Context, job bench.Params) (*bench.Report, error) {
		in, err := json.Marshal(job)
		if err != nil {
			return nil, err
		}
		var out, errOut bytes.Buffer
		cmd := tb.Command(ctx, h, exe, "bench-worker")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(in), &out, &errOut
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("on %s: %w: %s", h.Name, err, strings.TrimSpace(errOut.String()))
		}
		var rep bench.Report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			return nil, fmt.Errorf("on %s: bad report: %w", h.Name, err)
		}
		return &rep, nil
	}
}
