package sessions

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseKind(t *testing.T) {
	tests := []struct {
		in   string
		want Kind
		err  string
	}{
		{in: "sh shell", want: Kind{Name: "sh", Type: TypeShell}},
		{in: "edit command idle=2h warn=5m memory=512MiB cpus=0.5 processes=64 -- /usr/bin/vi -n",
			want: Kind{Name: "edit", Type: TypeCommand, Command: []string{"/usr/bin/vi", "-n"}, Idle: 2 * time.Hour, Warn: 5 * time.Minute,
				Limits: Limits{MemoryBytes: 512 << 20, CPUs: 0.5, Processes: 64}}},
		{in: `lab web restart=elsewhere -- /bin/sh -c 'exec lab --port "$PORT"'`,
			want: Kind{Name: "lab", Type: TypeWeb, RestartElsewhere: true, Command: []string{"/bin/sh", "-c", `exec lab --port "$PORT"`}}},
		{in: "x", err: "want NAME TYPE"},
		{in: "x telnet", err: "want shell, command or web"},
		{in: "x command", err: "needs a command"},
		{in: "Bad shell", err: "a name is"},
		{in: "x shell idle=soon", err: "idle"},
		{in: "x shell colour=red", err: "unknown option"},
		{in: "x shell processes=-1", err: "negative"},
		{in: "x command -- sh -c 'unclosed", err: "unclosed"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			k, err := ParseKind(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if k.Name != tc.want.Name || k.Type != tc.want.Type || !slices.Equal(k.Command, tc.want.Command) || k.Idle != tc.want.Idle ||
				k.Warn != tc.want.Warn || k.Limits != tc.want.Limits || k.RestartElsewhere != tc.want.RestartElsewhere {
				t.Fatalf("got %+v, want %+v", k, tc.want)
			}
		})
	}
}

func TestWarnAt(t *testing.T) {
	if got := (Kind{Idle: 10 * time.Minute}).warnAt(); got != 9*time.Minute {
		t.Errorf("default warning at %v, want 9m", got)
	}
	if got := (Kind{Idle: time.Minute, Warn: time.Hour}).warnAt(); got != 0 {
		t.Errorf("a warning longer than idle at %v, want 0", got)
	}
}
