package tier

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/mure-dev/mure/internal/cache"
)

var (
	// ErrNotFound: the object is in no tier.
	ErrNotFound = errors.New("cache object not found")
	// ErrCorrupt: the object's file failed its checksum (it was removed).
	ErrCorrupt = errors.New("cache object corrupt")
	// ErrBusy: the object is only on disk and the disk is past its
	// capacity (Config.DiskQueue, DiskLatency); ask the origin instead.
	ErrBusy = errors.New("cache disk tier busy")
)

// Meta is what the tiers know of an object without reading its body.
type Meta struct {
	// Key is the primary cache key (the origin and request target).
	Key string `json:"key"`
	// Vary are the request fields the response varies on, and Selected
	// their values in the request that fetched it.
	Vary     []string       `json:"vary,omitempty"`
	Selected cache.Selected `json:"selected,omitempty"`
	// Status, Header and the times are the stored response.
	Status       int          `json:"status"`
	Header       cache.Header `json:"header"`
	RequestTime  time.Time    `json:"request_time"`
	ResponseTime time.Time    `json:"response_time"`
	// Size is the body's length in bytes.
	Size int64 `json:"size"`
}

// ID names the object: the primary key and the variant's selected values.
func (m *Meta) ID() string {
	h := sha256.Sum256([]byte(m.Key + "\x00" + m.Selected.Key()))
	return hex.EncodeToString(h[:16])
}

// Stored is the response part of the meta, for the cache's rules.
func (m *Meta) Stored() *cache.Stored {
	return &cache.Stored{Status: m.Status, Header: m.Header, RequestTime: m.RequestTime, ResponseTime: m.ResponseTime}
}

// Object is a stored response and its whole body.
type Object struct {
	Meta
	Body []byte
	// FromDisk marks an object Get read from the disk tier (the copy it
	// promoted to memory is not marked).
	FromDisk bool
}
