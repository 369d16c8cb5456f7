package s3

import (
	"context"
	"strings"
	"time"

	"github.com/mure-dev/mure/internal/files"
)

// DefaultUploadTTL is how long a multipart upload may stay unfinished
// before it is removed with its parts.
const DefaultUploadTTL = 24 * time.Hour

// sweepUploads removes the multipart uploads started more than ttl ago,
// in every bucket. It returns how many it removed.
func (h *Handler) sweepUploads(ctx context.Context, ttl time.Duration, now time.Time) (int, error) {
	removed := 0
	fwd := files.OpenOptions{Forwarding: files.Forwarding{Forward: true}}
	for after := ""; ; {
		top, err := h.files.List(ctx, files.ListOptions{Delimiter: "/", After: after, Limit: 1000, Consistent: true})
		if err != nil {
			return removed, err
		}
		for _, bucket := range top.Prefixes {
			ups, err := h.files.List(ctx, files.ListOptions{Prefix: bucket + uploadsDir + "/", Delimiter: "/", Limit: 10000, Consistent: true})
			if err != nil {
				return removed, err
			}
			for _, dir := range ups.Prefixes {
				info, err := h.files.Stat(ctx, dir+"key", fwd)
				// A folder without its key file is a removal that stopped
				// midway: finish it.
				if err == nil && now.Sub(info.Modified) < ttl {
					continue
				}
				h.log.Info("s3: removing an abandoned multipart upload", "upload", strings.TrimSuffix(dir, "/"), "started", info.Modified)
				h.removeDir(ctx, dir)
				removed++
			}
		}
		if top.Next == "" {
			return removed, nil
		}
		after = top.Next
	}
}
