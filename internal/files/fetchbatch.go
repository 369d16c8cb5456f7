package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mure-dev/mure/internal/meta"
)

// Small blobs a node must copy from the same source in one round of the
// replication worker are fetched in one request (Peers.FetchBlobs): with
// replication to every node and small writes, one request per copy was
// a TLS round trip, a handler and a client read loop per copy on both
// ends (docs/decisions/0063-small-copies-fetched-in-batches.md).
const (
	// MaxFetchBatch bounds the blobs of one batch fetch.
	MaxFetchBatch = 64
	// batchBlobMax is the largest blob fetched in a batch (the store's
	// small blobs, kept in segments).
	batchBlobMax = 64 << 10
	// batchBytes bounds the bytes of one batch fetch, so that one answer
	// does not hold a fetch slot for long on a slow link.
	batchBytes = 1 << 20
)

// errNotSent is a blob the source did not send (it does not have it).
var errNotSent = errors.New("not on that node")

// fetchJob is the work of one fetch slot: files to copy from source,
// one, or several small ones in one batch.
type fetchJob struct {
	source string
	files  []*meta.File
}

// fetchJobs groups one round's copies into jobs: the small blobs of a
// source in batches of at most MaxFetchBatch blobs and batchBytes bytes,
// every other copy alone.
func fetchJobs(wants []fetchJob) []fetchJob {
	var jobs []fetchJob
	open := map[string]int{} // source → index in jobs of its open batch
	size := map[string]int64{}
	for _, w := range wants {
		for _, f := range w.files {
			if f.Size > batchBlobMax {
				jobs = append(jobs, fetchJob{source: w.source, files: []*meta.File{f}})
				continue
			}
			i, ok := open[w.source]
			if !ok || len(jobs[i].files) == MaxFetchBatch || size[w.source]+f.Size > batchBytes {
				i = len(jobs)
				jobs = append(jobs, fetchJob{source: w.source})
				open[w.source], size[w.source] = i, 0
			}
			jobs[i].files = append(jobs[i].files, f)
			size[w.source] += f.Size
		}
	}
	return jobs
}

// resumeReplicas is resumeReplica for a job of several files: their
// blobs in one batch fetch, then each reported (the reports join the
// same batches as any other). It returns each file's error.
func (s *Service) resumeReplicas(ctx context.Context, job fetchJob, fetched func()) []error {
	if len(job.files) == 1 {
		return []error{s.resumeReplica(ctx, job.files[0], job.source, fetched)}
	}
	for _, f := range job.files {
		s.protect.add(f.Path, f.BlobID, 10*time.Minute)
		defer s.protect.done(f.Path, f.BlobID)
	}
	errs := s.fetchReplicas(ctx, job)
	if fetched != nil {
		fetched()
	}
	var wg sync.WaitGroup
	for i, f := range job.files {
		if errs[i] != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.reportResumed(ctx, f)
		}()
	}
	wg.Wait()
	return errs
}

// fetchReplicas brings the blobs of job's files here, those not here
// already, in one batch fetch from job.source; it returns each file's
// error.
func (s *Service) fetchReplicas(ctx context.Context, job fetchJob) []error {
	errs := make([]error, len(job.files))
	var refs []BlobRef
	var at []int // at[k]: the index in job.files of refs[k]
	for i, f := range job.files {
		if info, err := s.st.Stat(f.Path, f.BlobID); err == nil && info.Sum == f.Sum.String() {
			continue
		}
		refs = append(refs, BlobRef{Path: f.Path, ID: f.BlobID, Sum: f.Sum.String(), Size: f.Size})
		at = append(at, i)
		errs[i] = errNotSent
	}
	if len(refs) == 0 {
		return errs
	}
	_, peer, ok := s.nodeAddrs(job.source)
	if !ok {
		for _, i := range at {
			errs[i] = fmt.Errorf("unknown node %s", job.source)
		}
		return errs
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	err := s.peers.FetchBlobs(ctx, peer, refs, func(k int, body io.Reader) error {
		i := at[k]
		if _, err := s.storeBlob(refs[k], &throttledReader{ctx: ctx, r: body, t: s.throttle, m: s.metrics}); err != nil {
			errs[i] = err // this blob only: the next one's frame follows
			return ctx.Err()
		}
		errs[i] = nil
		s.metrics.replicaBytesIn.Add(float64(refs[k].Size))
		return nil
	})
	for k, i := range at {
		switch {
		case errors.Is(errs[i], errNotSent) && err != nil:
			errs[i] = fmt.Errorf("fetch %s from %s: %w", refs[k].Path, job.source, err)
		case errs[i] != nil:
			errs[i] = fmt.Errorf("fetch %s from %s: %w", refs[k].Path, job.source, errs[i])
		}
	}
	return errs
}
