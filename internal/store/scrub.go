package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mure-dev/mure/internal/pause"
)

// ScrubPace bounds the disk bandwidth of one Scrub pass.
type ScrubPace struct {
	// Period spreads a pass over about this long: the pass reads at
	// (bytes stored + BlobCost per blob) / Period. 0: as fast as MaxRate
	// allows.
	Period time.Duration
	// MaxRate caps the reading rate in bytes per second, whatever Period
	// asks (a large store then takes longer than Period). 0: no cap.
	MaxRate float64
}

// BlobCost is what a blob counts for, besides its content, in a scrub's
// pacing: opening it and reading its sidecar are not free.
const BlobCost = 4 << 10

// Scrub checks every blob once against its sidecar (see Verify), in hash
// order, at the pace given. It calls bad for every blob found corrupt
// (already in quarantine then), with the blob's path and id when its
// sidecar could be read (Path "" otherwise), and returns the bytes read.
// Blobs committed or removed during the pass may or may not be checked.
// It stops early, with ctx's error, when ctx is done.
func (s *Store) Scrub(ctx context.Context, pace ScrubPace, bad func(Info, error)) (int64, error) {
	if s.closed.Load() {
		return 0, fmt.Errorf("store: scrub: %w", ErrClosed)
	}
	nblobs, nbytes := s.Usage()
	p := &pacer{start: time.Now(), rate: pace.MaxRate}
	if pace.Period > 0 {
		r := float64(nbytes+nblobs*BlobCost) / pace.Period.Seconds()
		if p.rate == 0 || r < p.rate {
			p.rate = r
		}
	}
	var read int64
	err := s.eachPathDir(func(dir string) error {
		l, err := locDir(dir)
		if err != nil {
			return err
		}
		for _, id := range s.dataIDs(l) {
			if err := p.wait(ctx, BlobCost); err != nil {
				return err
			}
			before := p.done
			info, err := s.check(ctx, l, id, p)
			read += p.done - before
			s.stats.scrubBytes.Add(p.done - before)
			switch {
			case errors.Is(err, ErrChecksum) && bad != nil:
				bad(Info{Path: info.Path, ID: id, Size: info.Size, Sum: info.Sum}, err)
			case ctx.Err() != nil:
				return ctx.Err()
			}
			// Other errors (a blob removed meanwhile, an I/O error) do
			// not stop the pass: the next pass tries again.
		}
		return nil
	})
	if err == nil {
		err = s.eachSmall(func(l loc, path, id string) error {
			if err := p.wait(ctx, BlobCost); err != nil {
				return err
			}
			info, ok, err := s.verifySmall(l, path, id)
			if ok {
				read += info.Size
				s.stats.scrubBytes.Add(info.Size)
			}
			switch {
			case errors.Is(err, ErrChecksum) && bad != nil:
				bad(Info{Path: path, ID: id, Size: info.Size, Sum: info.Sum}, err)
			case ctx.Err() != nil:
				return ctx.Err()
			}
			return p.wait(ctx, info.Size)
		})
	}
	if err != nil {
		return read, fmt.Errorf("store: scrub: %w", err)
	}
	s.stats.scrubPasses.Add(1)
	return read, nil
}

// dataIDs lists the ids of the data files in l's directory.
func (s *Store) dataIDs(l loc) []string {
	mu := &s.stripes[l.stripe]
	mu.RLock()
	ents, err := s.fs.ReadDir(l.dir)
	mu.RUnlock()
	if err != nil {
		return nil
	}
	var ids []string
	for _, e := range ents {
		if name := e.Name(); validID(name) && e.Type().IsRegular() { // sidecars are not valid ids
			ids = append(ids, name)
		}
	}
	return ids
}

// pacer spreads reads at rate bytes per second from start. A nil pacer
// does not wait.
type pacer struct {
	start time.Time
	rate  float64 // bytes/s; 0: no limit
	done  int64   // bytes accounted so far
}

// wait accounts n more bytes and sleeps until they are due.
func (p *pacer) wait(ctx context.Context, n int64) error {
	if p == nil {
		return ctx.Err()
	}
	p.done += n
	if p.rate <= 0 {
		return ctx.Err()
	}
	return pause.Until(ctx, p.start.Add(time.Duration(float64(p.done)/p.rate*float64(time.Second))))
}
