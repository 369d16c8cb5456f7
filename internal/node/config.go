package node

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mure-dev/mure/internal/apps"
	"github.com/mure-dev/mure/internal/auth"
	"github.com/mure-dev/mure/internal/cache/proxy"
	"github.com/mure-dev/mure/internal/cluster"
	"github.com/mure-dev/mure/internal/frontdoor"
	"github.com/mure-dev/mure/internal/sessions"
	"github.com/mure-dev/mure/internal/store"
)

// Default addresses (see docs/operations.md).
const (
	DefaultHTTPAddr = "127.0.0.1:7946"
	DefaultPeerAddr = "127.0.0.1:7947"
)

// Config is everything one node needs. The serve command fills it from
// flags or a config file.
type Config struct {
	// DataDir holds the node's identity, raft state and blobs.
	DataDir string
	// HTTPAddr is where the client API listens; AdvertiseHTTP is how
	// clients redirected here reach it (default: HTTPAddr, or the peer
	// advertise host with HTTPAddr's port when HTTPAddr is unspecified).
	HTTPAddr, AdvertiseHTTP string
	// TLSCert and TLSKey, when set, are PEM files of the client ports'
	// certificate and key (both ports speak TLS only); ReloadTLS reads
	// them again (mure serve does on SIGHUP). See certs for a cluster CA.
	TLSCert, TLSKey string
	// FastHTTPAddr, when set, is where the fast read lane listens: GET and
	// HEAD of whole files this node may serve from its own copy, on
	// fasthttp; everything else it redirects to the main port.
	FastHTTPAddr string
	// UIAddr, when set, is the monitoring port: the dashboard (/ui/),
	// /history, /metrics, /status and the health probes on a listener of
	// their own, without the client port's front, admission and
	// connection limit, so that they answer while the client port is
	// overloaded (docs/decisions/0044-dashboard-under-overload.md). They
	// stay on the client port as well, with the same authentication.
	UIAddr string
	// S3Addr, when set, is where the S3 API listens (internal/files/s3):
	// buckets are the top-level folders, access keys sign the requests.
	S3Addr string
	// S3UploadTTL is how long an S3 multipart upload may stay unfinished
	// before the leader removes it (0: 24 h).
	S3UploadTTL time.Duration
	// Proxy, when set, runs the caching reverse proxy (internal/cache/
	// proxy) on its own listener; the node fills its disk directory
	// (DATA/cache), NoSync and TLS.
	Proxy *proxy.Config
	// WebDAVAddr, when set, is where WebDAV listens (internal/files/webdav):
	// the whole namespace as folders, Basic auth (TLS or loopback) or a
	// bearer token, locks held in the cluster.
	WebDAVAddr string
	// PprofAddr, when set, serves Go's profiler (/debug/pprof/) there:
	// keep it on a loopback address.
	PprofAddr string
	// PeerAddr is the one port for node-to-node traffic; Advertise is the
	// address other nodes dial (default: PeerAddr).
	PeerAddr, Advertise string
	// Zone labels the place this node runs in (--zone; "" for none):
	// gossiped to the others, shown in status, and read replicas are
	// chosen in the reader's own zone first (cluster.ValidZone).
	Zone string
	// Join lists peer addresses of members; used only when DataDir holds
	// no cluster yet.
	Join []string
	// Key is the cluster key (base64). Empty: read DataDir/cluster.key, or
	// create one when starting a new cluster.
	Key string
	// Token, when set, is a static admin bearer token (the deprecated
	// --token; users' tokens replace it); it authenticates even when
	// Auth.Open is set.
	Token string
	// Auth is the security model on the client API (docs/security.md).
	Auth AuthConfig
	// MaxBody is the largest file accepted, in bytes.
	MaxBody int64
	// MaxInFlight and MaxQueue bound the client requests executing and
	// waiting; beyond them requests get 503 with Retry-After (0: defaults
	// of internal/admission).
	MaxInFlight, MaxQueue int
	// MaxConns bounds the connections open at once on each client port
	// (the API and the fast lane) and on the S3 port (--s3); beyond, a new
	// one gets 503 at once (S3's: SlowDown in XML) (0: no bound).
	MaxConns int
	// MaxWriteInFlight and MaxWriteQueue bound, within those, the writes
	// (PUT and DELETE of files): a write's own time grows with the writes
	// running beside it (fsyncs, raft rounds), so letting hundreds run at
	// once keeps none of them fast (0: 32 and 128; docs/reliability.md).
	MaxWriteInFlight, MaxWriteQueue int
	// NoSync skips fsync (tests only: it voids durability).
	NoSync bool
	// CacheBytes bounds the memory cache of small files.
	CacheBytes int64
	// ScrubPeriod is how often every local replica is read back and
	// checked against its checksum (0: every 24 h; negative: never, only
	// at first open after a start). ScrubRate caps that reading in bytes
	// per second (0: 64 MiB/s; negative: no cap). See files.Config.
	ScrubPeriod time.Duration
	ScrubRate   int64
	// StoreFS is the file system of the blob store (nil: the operating
	// system's). Tests only: a disk that loses power (store/crashfs).
	StoreFS store.FS
	// LogFS is the file system of raft's log (DATA/raft/log; nil: the
	// operating system's). Tests only, as StoreFS.
	LogFS store.FS
	// DebugFaults exposes POST /debug/isolate (cut this node off from its
	// peers at the transport, or heal it). Tests only.
	DebugFaults bool
	// DebugHostFigures names a JSON file of simulated load figures by node
	// ID (SimHost), read at every sample: nodes sharing one machine gossip
	// the skewed figures of separate hosts. Tests only.
	DebugHostFigures string
	// DebugUnsafeReads makes the node serve its local copy without checking
	// validity, lease or invalidations: a deliberately broken protocol that
	// the linearizability checker must catch. Tests only.
	DebugUnsafeReads bool
	// CGIDir, when set, holds the CGI programs served as /cgi/NAME on the
	// client API; CGITimeout bounds one run (0: 30 s); Apps are served by
	// reverse proxy under their prefixes. See internal/apps.
	CGIDir     string
	CGITimeout time.Duration
	// CGINice runs CGI programs at this niceness (0: the node's own);
	// CGIMaxRunning bounds those running at once (0: 4 per core).
	CGINice, CGIMaxRunning int
	Apps                   []apps.Proxy
	// Sessions are the persistent sessions this node offers
	// (docs/sessions.md): kinds, accounts, limits. Dir is filled by the
	// node (DATA/sessions).
	Sessions sessions.Config
	// Front, when set, gives this node a front door (docs/dispatch.md): it
	// opens Front.Addr whenever it holds the dispatcher role. Key and
	// Logger are filled by the node.
	Front *frontdoor.Config
	// Extra services are started after the built-in ones (and stopped
	// before them): a program embedding a node, or a test.
	Extra  []Service
	Timing cluster.Timing
	Logger *slog.Logger
}

// AuthConfig is how a node checks its clients.
type AuthConfig struct {
	// Open switches authentication off: the client API is open to
	// whoever reaches the port (trusted networks only). By default every
	// client request authenticates (bearer token, or Basic with a password
	// or access key over TLS or from loopback) and is checked against the
	// caller's role; health probes stay open.
	Open bool
	// AnonymousRead are grants given to callers without credentials
	// (e.g. ro:pub/ opens pub/ for reading to everyone).
	AnonymousRead []auth.Grant
	// MetricsToken, when set, is a bearer token that may read /metrics
	// and nothing else; without it /metrics needs an admin.
	MetricsToken string
	// LoginBurst is how many failed logins (password or access key) an
	// address or a user may have before being refused for a while; one is
	// forgiven every 6 s (0: 10).
	LoginBurst int
	// HashParams hash new passwords (zero: auth.DefaultHashParams, RFC
	// 9106's recommendation; tests choose auth.TestHashParams).
	HashParams auth.HashParams
}

// validate fills defaults and checks what the node itself needs; each
// service checks its own configuration.
func (c *Config) validate() error {
	if c.DataDir == "" {
		return errors.New("a data directory is required (--data DIR)")
	}
	if err := cluster.ValidZone(c.Zone); err != nil {
		return fmt.Errorf("--zone: %w", err)
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = DefaultHTTPAddr
	}
	if c.PeerAddr == "" {
		c.PeerAddr = DefaultPeerAddr
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Timing == (cluster.Timing{}) {
		c.Timing = cluster.DefaultTiming()
	}
	return nil
}
