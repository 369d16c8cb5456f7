package cache

import (
	"sort"
	"strings"
)

// VaryFields returns the request fields a response varies on, canonical,
// sorted and without duplicates; star is true for "Vary: *".
func VaryFields(respHeader Header) (fields []string, star bool) {
	seen := map[string]bool{}
	for _, v := range list(respHeader, "Vary") {
		if v == "*" {
			return nil, true
		}
		c := canonical(v)
		if !seen[c] {
			seen[c] = true
			fields = append(fields, c)
		}
	}
	sort.Strings(fields)
	return fields, false
}

// Selected is the values of a request's fields named by Vary, normalised:
// what a later request must match to be answered by the stored response
// (RFC 9111 §4.1). A field absent from the request is absent here.
type Selected map[string]string

// Select takes the values of fields from a request header.
func Select(fields []string, reqHeader Header) Selected {
	s := make(Selected, len(fields))
	for _, f := range fields {
		if lines, ok := reqHeader[f]; ok {
			s[f] = normalise(f, lines)
		}
	}
	return s
}

// Matches reports whether a request selects the same values.
func (s Selected) Matches(fields []string, reqHeader Header) bool {
	for _, f := range fields {
		want, stored := s[f]
		lines, present := reqHeader[f]
		if stored != present || (present && normalise(f, lines) != want) {
			return false
		}
	}
	return true
}

// Key is a stable string of the selected values, to tell variants apart.
func (s Selected) Key() string {
	names := make([]string, 0, len(s))
	for k := range s {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		b.WriteString(k)
		b.WriteByte(':')
		b.WriteString(s[k])
		b.WriteByte('\n')
	}
	return b.String()
}

// unordered are the negotiation fields whose members are
// case-insensitive tokens with weights, so that neither their order nor
// their case changes what they select (RFC 9110 §12.5).
var unordered = map[string]bool{"Accept-Language": true, "Accept-Encoding": true, "Accept-Charset": true}

// normalise joins a field's lines and members with ", " and collapses the
// whitespace around them, so that equivalent spellings match; the members
// of the unordered negotiation fields are also lower-cased, stripped of
// spaces and sorted.
func normalise(field string, lines []string) string {
	var members []string
	for _, l := range lines {
		for _, m := range splitList(l) {
			if unordered[field] {
				members = append(members, strings.ToLower(strings.Join(strings.Fields(m), "")))
				continue
			}
			members = append(members, strings.Join(strings.Fields(m), " "))
		}
	}
	if unordered[field] {
		sort.Strings(members)
	}
	return strings.Join(members, ", ")
}
