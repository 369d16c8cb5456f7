package bytesize

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr string // substring of the error; "" = no error
	}{
		{"0", 0, ""},
		{"4096", 4096, ""},
		{"4096B", 4096, ""},
		{"32MiB", 32 * MiB, ""},
		{"32mib", 32 * MiB, ""},
		{"32 MiB", 32 * MiB, ""},
		{" 100M ", 100 * MiB, ""},
		{"100MB", 100 * MiB, ""},
		{"64k", 64 * KiB, ""},
		{"1.5G", 3 * GiB / 2, ""},
		{"2TiB", 2 * TiB, ""},
		{"0MiB", 0, ""},
		{"8388607T", 8388607 * TiB, ""},
		{"", 0, "want a number of bytes"},
		{"MiB", 0, "want a number of bytes"},
		{"-1", 0, "want a number of bytes"},
		{"+5M", 0, "want a number of bytes"},
		{"1.5", 0, "want a number of bytes"}, // fractions need a unit
		{"1e6", 0, "want a number of bytes"},
		{"0x10", 0, "want a number of bytes"},
		{"Inf", 0, "want a number of bytes"},
		{"NaN", 0, "want a number of bytes"},
		{"50 MiB/s", 0, "want a number of bytes"}, // a rate is ParseRate's
		{"12XB", 0, "want a number of bytes"},
		{"64 mebibytes", 0, "want a number of bytes"},
		{"8388608T", 0, "too large"},
		{"9999999999999999999", 0, "want a number of bytes"},
		{"9000000T", 0, "too large"},
		{"8388608.5T", 0, "too large"},
		{"8388607.5T", 8388607*TiB + TiB/2, ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Parse(tc.in)
			if tc.wantErr == "" {
				if err != nil || got != tc.want {
					t.Fatalf("Parse(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Parse(%q) = %d, %v; want an ErrSyntax containing %q", tc.in, got, err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), "\""+tc.in+"\"") {
				t.Errorf("error %q does not quote the input", err)
			}
		})
	}
}

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"50MiB/s", 50 * MiB, true},
		{"50MiB/S", 50 * MiB, true},
		{"50 MiB/s", 50 * MiB, true},
		{"64MiB", 64 * MiB, true},
		{"0", 0, true},
		{"0/s", 0, true},
		{"/s", 0, false},
		{"50MiB/h", 0, false},
		{"50MiB/s/s", 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseRate(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("ParseRate(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
			}
		})
	}
}

func TestFormatRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0B"},
		{1000, "1000B"},
		{KiB, "1KiB"},
		{1536 * KiB, "1536KiB"},
		{64 * MiB, "64MiB"},
		{3 * GiB, "3GiB"},
		{5 * TiB, "5TiB"},
		{math.MaxInt64, "9223372036854775807B"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			if got := Format(tc.n); got != tc.want {
				t.Fatalf("Format(%d) = %q, want %q", tc.n, got, tc.want)
			}
			if back, err := Parse(tc.want); err != nil || back != tc.n {
				t.Fatalf("Parse(Format(%d)) = %d, %v", tc.n, back, err)
			}
		})
	}
}
