package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/mure-dev/mure/internal/meta"
)

// CopyOptions are the options of Copy and Rename.
type CopyOptions struct {
	Forwarding
	// SourceVersion, when non-zero, requires the source to be at this
	// version (an if-match on the source).
	SourceVersion uint64
	// Cond is the condition on the destination.
	Cond Cond
	// Attrs, when set, replace the source's attributes on the
	// destination; nil copies them.
	Attrs *Attrs
	// IdempotencyKey makes a retried copy or rename answer with the first
	// attempt's outcome. One is generated when empty.
	IdempotencyKey string
}

// Copy writes the current version of src as the new content of dst: the
// source is read like Open (locally or, with o.Forward, from a holder) and
// written like Put. The destination is a new version with its own ETag
// and the source's attributes (or o.Attrs); the source is untouched. It returns the destination's Info.
func (s *Service) Copy(ctx context.Context, src, dst string, o CopyOptions) (Info, error) {
	info, _, err := s.copy(ctx, src, dst, o)
	return info, err
}

func (s *Service) copy(ctx context.Context, src, dst string, o CopyOptions) (Info, Info, error) {
	if err := ValidatePath(src); err != nil {
		return Info{}, Info{}, err
	}
	if err := checkWrite(dst, o.IdempotencyKey); err != nil {
		return Info{}, Info{}, err
	}
	if v, ok := s.idemDone(meta.KindCommit, dst, o.IdempotencyKey); ok {
		info, err := s.settledDuplicate(ctx, dst, v) // a retry of a copy that succeeded
		return info, Info{}, err
	}
	rd, err := s.Open(ctx, src, OpenOptions{Forwarding: o.Forwarding})
	if err != nil {
		return Info{}, Info{}, err
	}
	defer rd.Close()
	from := rd.Info()
	if o.SourceVersion != 0 && from.Version != o.SourceVersion {
		return Info{}, from, kindErr(ErrPrecondition, nil, "the source %s is at version %s, not %s", src, from.ETag, meta.ETagOf(o.SourceVersion))
	}
	attrs := from.Attrs
	if o.Attrs != nil {
		attrs = *o.Attrs
	}
	info, err := s.Put(ctx, dst, rd, PutOptions{Forwarding: o.Forwarding, Size: rd.Length(), Cond: o.Cond, Attrs: attrs, IdempotencyKey: o.IdempotencyKey})
	return info, from, err
}

// Rename moves src to dst: a Copy, then a delete of the source version
// that was copied. It is not atomic (docs/decisions/0011-file-api.md): a
// reader may see both paths for a moment, and when the source changed
// between the copy and the delete, the new source version is kept and
// Rename returns ErrConflict with dst holding the copy of the old one.
func (s *Service) Rename(ctx context.Context, src, dst string, o CopyOptions) (Info, error) {
	if src == dst {
		return Info{}, kindErr(ErrBadRequest, nil, "cannot rename %s to itself", src)
	}
	o.IdempotencyKey = idemOrRandom(o.IdempotencyKey)
	info, from, err := s.copy(ctx, src, dst, o)
	if err != nil {
		return Info{}, err
	}
	del := DeleteOptions{Forwarding: o.Forwarding, IdempotencyKey: derivedKey(o.IdempotencyKey, "rename-delete")}
	if from.Version != 0 {
		del.Cond.IfMatch = from.Version
	}
	err = s.Delete(ctx, src, del)
	if errors.Is(err, ErrPrecondition) || errors.Is(err, ErrNotFound) {
		return info, kindErr(ErrConflict, err, "copied %s to %s, but the source changed before it could be removed: both exist now (%v)", src, dst, err)
	}
	if err != nil {
		return info, fmt.Errorf("copied %s to %s, removing the source: %w", src, dst, err)
	}
	return info, nil
}

// derivedKey is a second idempotency key derived from key, for a second
// write of the same request.
func derivedKey(key, what string) string {
	sum := sha256.Sum256([]byte(what + "\x00" + key))
	return what + "-" + hex.EncodeToString(sum[:16])
}
