package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mure-dev/mure/internal/cache/proxy"
)

// TestProxyFlagsFromConfigFile: several origins from a config file, sizes
// in settings' spelling; a bad origin names its line.
func TestProxyFlagsFromConfigFile(t *testing.T) {
	tests := []struct {
		name, file string
		origins    []string
		mem        int64
		wantErr    string
	}{
		{"several origins", "proxy = 127.0.0.1:8080\nproxy-origin = http://127.0.0.1:9000\n" +
			"proxy-origin = www.example.com=http://10.0.0.5:80\nproxy-origin = www.example.com/static/=http://10.0.0.6\n" +
			"proxy-memory = 256MiB\n",
			[]string{"http://127.0.0.1:9000", "www.example.com=http://10.0.0.5:80", "www.example.com/static/=http://10.0.0.6"}, 256 << 20, ""},
		{"bad origin", "proxy = 127.0.0.1:8080\nproxy-origin = ftp://x\n", nil, 0, "mure.conf:2"},
		{"bad size", "proxy = 127.0.0.1:8080\nproxy-disk = lots\n", nil, 0, "mure.conf:2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(t.TempDir(), "mure.conf")
			if err := os.WriteFile(name, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			fs.String("config", "", "")
			done := proxyFlags(fs)
			err := applyConfigFile(fs, name)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cfg := done()
			if cfg == nil || cfg.Addr != "127.0.0.1:8080" || cfg.MemoryBytes != tc.mem || len(cfg.Origins) != len(tc.origins) {
				t.Fatalf("config %+v", cfg)
			}
			for i, o := range cfg.Origins {
				if o.String() != tc.origins[i] {
					t.Errorf("origin %d = %s, want %s", i, o, tc.origins[i])
				}
			}
		})
	}
}

// TestProxyBypassMaxFlag: --proxy-bypass-max 0 relays none (decision
// 0069), not the default; unset is the default; a negative count is
// refused with why.
func TestProxyBypassMaxFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		want    int
		wantErr string
	}{
		{"unset", nil, proxy.DefaultBypassMax, ""},
		{"zero", []string{"--proxy-bypass-max", "0"}, proxy.NoRelays, ""},
		{"eight", []string{"--proxy-bypass-max", "8"}, 8, ""},
		{"negative", []string{"--proxy-bypass-max", "-1"}, 0, "must not be negative"},
		{"not a number", []string{"--proxy-bypass-max", "many"}, 0, "not a whole number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			done := proxyFlags(fs)
			err := fs.Parse(append([]string{"--proxy", "127.0.0.1:8080"}, tc.args...))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := done().BypassMax; got != tc.want {
				t.Errorf("BypassMax %d, want %d", got, tc.want)
			}
		})
	}
}
