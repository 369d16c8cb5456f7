package bytesize

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrSyntax is wrapped by every error of Parse and ParseRate.
var ErrSyntax = errors.New("bad byte size")

// Unit multipliers.
const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
	TiB int64 = 1 << 40
)

// units are the suffixes, longest spellings first within a unit so that
// "MiB" is not read as "M" followed by "iB".
var units = []struct {
	suffix string
	mult   int64
}{
	{"TIB", TiB}, {"TB", TiB}, {"T", TiB},
	{"GIB", GiB}, {"GB", GiB}, {"G", GiB},
	{"MIB", MiB}, {"MB", MiB}, {"M", MiB},
	{"KIB", KiB}, {"KB", KiB}, {"K", KiB},
	{"B", 1},
}

// Parse reads a byte count: a non-negative number (fractions allowed with
// a unit, "1.5G") and an optional unit. The result is rounded down to
// whole bytes.
func Parse(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	if t == "" || strings.ContainsAny(t, "+-eEnN_xX") { // no signs, exponents, Inf/NaN, hex or separators
		return 0, fmt.Errorf("%w %q: want a number of bytes with an optional unit K, M, G or T (powers of 1024), such as 64MiB", ErrSyntax, s)
	}
	if n, err := strconv.ParseInt(t, 10, 64); err == nil {
		if n > math.MaxInt64/mult {
			return 0, fmt.Errorf("%w %q: too large", ErrSyntax, s)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || mult == 1 {
		return 0, fmt.Errorf("%w %q: want a number of bytes with an optional unit K, M, G or T (powers of 1024), such as 64MiB", ErrSyntax, s)
	}
	v := f * float64(mult)
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("%w %q: too large", ErrSyntax, s)
	}
	return int64(v), nil
}

// ParseRate reads bytes per second: a byte count as Parse reads it, with
// an optional "/s" ("50MiB/s").
func ParseRate(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if u := strings.ToLower(t); strings.HasSuffix(u, "/s") {
		t = t[:len(t)-2]
	}
	return Parse(t)
}

// Format writes n with the largest unit that divides it exactly
// ("64MiB", "1536KiB", "1000B"), so that Parse(Format(n)) == n.
func Format(n int64) string {
	for _, u := range []struct {
		name string
		mult int64
	}{{"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}, {"KiB", KiB}} {
		if n != 0 && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
