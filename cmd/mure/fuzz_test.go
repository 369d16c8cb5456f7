package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// FuzzConfigFile feeds applyConfigFile (serve.go) arbitrary --config file
// contents, with a small flag set mirroring mure serve's: a string, an
// int64, a bool and --config itself. Run it with
//
//	go test ./cmd/mure -run XXX -fuzz '^FuzzConfigFile$' -fuzztime 1000000x -parallel=1
//
// Bad files must give an error, never a panic; --data is given on the
// command line and must keep its value (command-line flags win); and an
// accepted file names only known flags, in 'flag = value' lines.
//
// Lines longer than bufio.Scanner's 64 KiB limit are covered by
// TestConfigFileLongLine rather than by seeds: seeds that large slow the
// fuzzer down (every mutation and minimisation rewrites the file).
func FuzzConfigFile(f *testing.F) {
	for _, s := range []string{
		"", "\n\n", "# comment\n", "max-body = 1024\nunsafe-no-fsync = true\n", "max-body=\"2048\"\r\n",
		"data = /elsewhere\n", "config = other.conf\n", "nope = 1\n", "max-body\n", "max-body = lots\n",
		"unsafe-no-fsync = maybe\n", "  # indented comment\n\t max-body =  7  \n", "= x\n", "max-body = 1 = 2\n",
		"unsafe-no-fsync\n", "max-body = 9223372036854775808\n", "max-body = 0x10\n", "\xff = \xfe\n",
		"max-body = 1\x00\n", "max-body = 1\rdata = x\n", "\ufeffmax-body = 1\n",
	} {
		f.Add([]byte(s))
	}
	name := filepath.Join(f.TempDir(), "mure.conf")
	f.Fuzz(func(t *testing.T, content []byte) {
		if err := os.WriteFile(name, content, 0o600); err != nil {
			t.Fatal(err)
		}
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		data := fs.String("data", "", "data directory")
		maxBody := fs.Int64("max-body", 5<<30, "largest file accepted, in bytes")
		noSync := fs.Bool("unsafe-no-fsync", false, "skip fsync")
		fs.String("config", "", "config file")
		if err := fs.Parse([]string{"--data", "/given", "--config", name}); err != nil {
			t.Fatal(err)
		}
		err := applyConfigFile(fs, name) // must not panic
		if *data != "/given" {
			t.Fatalf("the file overrode --data given on the command line: %q", *data)
		}
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		last := map[string]string{}
		for _, line := range strings.Split(string(content), "\n") {
			text := strings.TrimSpace(line)
			if text == "" || strings.HasPrefix(text, "#") {
				continue
			}
			name, value, ok := strings.Cut(text, "=")
			name = strings.TrimSpace(name)
			if !ok || fs.Lookup(name) == nil || name == "config" {
				t.Fatalf("accepted line %q", line)
			}
			last[name] = strings.Trim(strings.TrimSpace(value), `"`)
		}
		// The last line naming a flag decides its value.
		if v, ok := last["max-body"]; ok {
			if n, err := strconv.ParseInt(v, 0, 64); err != nil || n != *maxBody {
				t.Fatalf("max-body = %q gave %d (ParseInt: %d, %v)", v, *maxBody, n, err)
			}
		}
		if v, ok := last["unsafe-no-fsync"]; ok {
			if b, err := strconv.ParseBool(v); err != nil || b != *noSync {
				t.Fatalf("unsafe-no-fsync = %q gave %v (ParseBool: %v, %v)", v, *noSync, b, err)
			}
		}
	})
}

// TestConfigFileLongLine: a line over bufio.Scanner's limit is an error,
// not a panic and not a silent truncation.
func TestConfigFileLongLine(t *testing.T) {
	for _, content := range []string{strings.Repeat("x", 70000) + "\n", "max-body = " + strings.Repeat("1", 70000)} {
		name := filepath.Join(t.TempDir(), "mure.conf")
		if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Int64("max-body", 5<<30, "")
		if err := applyConfigFile(fs, name); err == nil {
			t.Errorf("a %d-byte line was accepted", len(content))
		}
	}
}
