package bench

import (
	"fmt"
	"strconv"
	"strings"
)

// DefaultSizes are the file sizes of paper 000.
var DefaultSizes = []int64{1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20}

// maxSize bounds a file size (1 GiB): a benchmark file lives in memory.
const maxSize = 1 << 30

// ParseSize parses a size: bytes, or a number followed by K, M or G (powers
// of 1024; KB, KiB, MB, MiB, GB and GiB are accepted as the same).
func ParseSize(s string) (int64, error) {
	num, mult := splitUnit(strings.ToUpper(strings.TrimSpace(s)))
	n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q: want a positive number of bytes, optionally with K, M or G", s)
	}
	if n > maxSize/mult {
		return 0, fmt.Errorf("bad size %q: at most 1G", s)
	}
	return n * mult, nil
}

// units are the size suffixes, largest first.
var units = []struct {
	suffix string
	mult   int64
}{{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}}

// splitUnit splits an upper-case size into its number and multiplier.
func splitUnit(t string) (string, int64) {
	for _, u := range units {
		for _, suf := range []string{u.suffix + "IB", u.suffix + "B", u.suffix} {
			if strings.HasSuffix(t, suf) {
				return strings.TrimSuffix(t, suf), u.mult
			}
		}
	}
	return strings.TrimSuffix(t, "B"), 1
}

// ParseSizes parses a comma-separated list of sizes.
func ParseSizes(s string) ([]int64, error) {
	var out []int64
	for f := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		n, err := ParseSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no size in %q", s)
	}
	return out, nil
}

// FormatSize writes n as ParseSize reads it, with the largest exact unit:
// 1024 is "1K", 1536 is "1536".
func FormatSize(n int64) string {
	for _, u := range units {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}
