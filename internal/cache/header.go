package cache

import (
	"net/textproto"
	"strings"
)

// Header is an HTTP header with canonical keys (net/http's Header converts
// to it without a copy).
type Header = map[string][]string

// get returns the first value of the field name.
func get(h Header, name string) string {
	v := h[textproto.CanonicalMIMEHeaderKey(name)]
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// has reports whether the field is present (even empty).
func has(h Header, name string) bool {
	_, ok := h[textproto.CanonicalMIMEHeaderKey(name)]
	return ok
}

// list returns the members of a list-based field over all its lines,
// trimmed, empty members dropped; commas inside quoted strings do not split.
func list(h Header, name string) []string {
	var out []string
	for _, line := range h[textproto.CanonicalMIMEHeaderKey(name)] {
		out = append(out, splitList(line)...)
	}
	return out
}

// splitList splits one field line at commas outside quoted strings.
func splitList(s string) []string {
	var out []string
	quoted, escaped, start := false, false, 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			if m := strings.TrimSpace(s[start:i]); m != "" {
				out = append(out, m)
			}
			start = i + 1
		}
	}
	if m := strings.TrimSpace(s[start:]); m != "" {
		out = append(out, m)
	}
	return out
}

// Clone returns a deep copy of h.
func Clone(h Header) Header {
	out := make(Header, len(h))
	for k, v := range h {
		out[k] = append([]string(nil), v...)
	}
	return out
}

func canonical(name string) string { return textproto.CanonicalMIMEHeaderKey(name) }
