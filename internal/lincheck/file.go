package lincheck

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/anishathalye/porcupine"
)

// savedOp is one operation as Save writes it.
type savedOp struct {
	Client int    `json:"client"`
	Input  Input  `json:"input"`
	Output Output `json:"output"`
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
	Note   string `json:"note,omitempty"`
}

// Save writes the history as JSON, so that a check that failed or gave up
// can be run again (Load) without the cluster that produced it.
func (h *History) Save(path string) error {
	h.mu.Lock()
	ops := make([]savedOp, len(h.ops))
	for i, op := range h.ops {
		note, _ := op.Metadata.(string)
		ops[i] = savedOp{op.ClientId, op.Input.(Input), op.Output.(Output), op.Call, op.Return, note}
	}
	h.mu.Unlock()
	b, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return os.WriteFile(path, b, 0o644)
}

// Load reads a history written by Save.
func Load(path string) (*History, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	var ops []savedOp
	if err := json.Unmarshal(b, &ops); err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	h := NewHistory()
	for _, op := range ops {
		h.ops = append(h.ops, porcupine.Operation{ClientId: op.Client, Input: op.Input, Output: op.Output, Call: op.Call, Return: op.Return, Metadata: op.Note})
	}
	return h, nil
}
