package files

import (
	"context"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mure-dev/mure/internal/meta"
)

// Attrs are what a writer says about a file's content besides its bytes:
// its content type, standard headers and user metadata, kept with the
// version in the catalogue and answered in Info (docs/decisions/0024-file-attrs.md).
type Attrs = meta.Attrs

// MaxAttrs bounds a file's attributes, names and values together: they
// live in the replicated catalogue, in every node's memory.
const MaxAttrs = 8 << 10

// StandardHeaders are the header names Attrs.Headers may hold, in
// canonical form.
var StandardHeaders = []string{"Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language", "Expires"}

// CheckAttrs reports whether a may be kept with a file: at most MaxAttrs
// bytes of valid UTF-8, header names from StandardHeaders, header values
// and names of user metadata without control characters.
func CheckAttrs(a Attrs) error {
	if n := a.Size(); n > MaxAttrs {
		return kindErr(ErrBadRequest, nil, "the file's attributes take %d bytes; at most %d are kept", n, MaxAttrs)
	}
	if hasControl(a.ContentType) || hasControl(a.PartsETag) {
		return kindErr(ErrBadRequest, nil, "a content type or ETag may not hold control characters")
	}
	for k, v := range a.Headers {
		if !IsStandardHeader(k) {
			return kindErr(ErrBadRequest, nil, "header %q is not kept with a file; those kept are %s", k, strings.Join(StandardHeaders, ", "))
		}
		if hasControl(v) {
			return kindErr(ErrBadRequest, nil, "the value of %s may not hold control characters", k)
		}
	}
	for k, v := range a.User {
		if k == "" || hasControl(k) {
			return kindErr(ErrBadRequest, nil, "a user metadata name %q must be non-empty, without control characters", k)
		}
		if !utf8.ValidString(v) {
			return kindErr(ErrBadRequest, nil, "the value of user metadata %q is not UTF-8", k)
		}
	}
	return nil
}

// IsStandardHeader reports whether name (canonical form) is one of
// StandardHeaders.
func IsStandardHeader(name string) bool { return slices.Contains(StandardHeaders, name) }

// hasControl reports whether s is not valid UTF-8 or holds a control
// character.
func hasControl(s string) bool {
	return !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// attrsRef is the command's form of a: nil when it says nothing.
func attrsRef(a Attrs) *meta.Attrs {
	if a.IsZero() {
		return nil
	}
	return &a
}

// applyCommit applies a Commit. A commit carrying the content's MD5 or
// attributes needs every voter at core v3; while one is older (an
// upgrade in progress) a commit with an MD5 only is applied without it,
// and one with attributes is refused.
func (s *Service) applyCommit(ctx context.Context, cmd meta.Command) (*meta.Result, error) {
	res, err := s.cl.Apply(ctx, cmd)
	if !errors.Is(err, meta.ErrUnsupported) || cmd.MD5 == "" && cmd.Attrs == nil {
		return res, err
	}
	if cmd.Attrs != nil {
		s.st.Remove(cmd.Path, cmd.BlobID) // refused before proposing: nothing refers to it
		// Not wrapping err: the caller must not take it for a refusal of Take.
		return nil, unavailable(ErrUnavailable, nil, "a file's content type and metadata are kept once every node runs a version that keeps them (core v3): "+err.Error())
	}
	cmd.MD5 = ""
	return s.cl.Apply(ctx, cmd)
}
