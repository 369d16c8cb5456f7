package files

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxPathLen is the longest key, in bytes.
const MaxPathLen = 1024

// ErrBadPath is wrapped by every path validation error.
var ErrBadPath = errors.New("invalid path")

// ValidatePath checks a file key (see docs/api.md, "Paths").
func ValidatePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%w: empty path", ErrBadPath)
	case len(p) > MaxPathLen:
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrBadPath, len(p), MaxPathLen)
	case !utf8.ValidString(p):
		return fmt.Errorf("%w: not valid UTF-8", ErrBadPath)
	case p[0] == '/':
		return fmt.Errorf("%w: %q starts with '/' (paths are relative keys such as a/b.txt)", ErrBadPath, p)
	case p[len(p)-1] == '/':
		return fmt.Errorf("%w: %q ends with '/'", ErrBadPath, p)
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: control character 0x%02x at byte %d", ErrBadPath, c, i)
		}
		if c == '\\' {
			return fmt.Errorf("%w: backslash at byte %d", ErrBadPath, i)
		}
	}
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "":
			return fmt.Errorf("%w: %q has an empty segment (\"//\")", ErrBadPath, p)
		case ".", "..":
			return fmt.Errorf("%w: %q has a %q segment", ErrBadPath, p, seg)
		}
	}
	return nil
}
