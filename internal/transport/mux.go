package transport

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// Protocol bytes written by the dialer right after the TLS handshake.
const (
	ProtoRaft   byte = 'R'
	ProtoGossip byte = 'G'
	ProtoHTTP   byte = 'H'
)

const (
	// handshakeTimeout bounds the server-side TLS handshake plus the read
	// of the protocol byte.
	handshakeTimeout = 10 * time.Second
	// deliverTimeout bounds how long an authenticated connection waits for
	// its sub-listener to accept it before it is dropped.
	deliverTimeout = 10 * time.Second
	// udpBufSize is the UDP read buffer (the largest possible datagram).
	udpBufSize = 65536
	// udpRecvBufSize is the socket receive buffer we try to get.
	udpRecvBufSize = 2 << 20
	// bindAttempts is how often Listen retries when BindAddr has port 0 and
	// the kernel-chosen TCP port is taken for UDP.
	bindAttempts = 5
)

// Config configures a Mux.
type Config struct {
	// BindAddr is the host:port to listen on for both TCP and UDP. With
	// port 0 the kernel picks a TCP port and UDP binds the same number.
	BindAddr string
	// AdvertiseAddr is the ip:port other nodes dial. Empty means the bound
	// address; if bound to an unspecified address (0.0.0.0 / ::) a private
	// non-loopback IPv4 of the machine is used, else 127.0.0.1. The host
	// must be an IP literal (memberlist advertises an IP).
	AdvertiseAddr string
	// Key is the shared cluster key.
	Key Key
	// Logger receives operational messages; nil discards them.
	Logger *slog.Logger
}

// Mux owns a node's peer address: it authenticates every TCP connection
// with the cluster key, routes it by protocol byte to a sub-listener, and
// owns the UDP socket on the same port for memberlist packets.
type Mux struct {
	log       *slog.Logger
	serverTLS *tls.Config
	clientTLS *tls.Config
	tcp       *net.TCPListener
	udp       *net.UDPConn
	advertise *net.TCPAddr
	subs      map[byte]*subListener
	raft      *raftLayer
	httpTr    *http.Transport

	closing chan struct{} // closed by Close
	wg      sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	pending map[net.Conn]struct{} // accepted conns still handshaking
	gossip  *gossipTransport      // current gossip transport, if any

	handshakeFailures atomic.Uint64
	routed            atomic.Uint64 // conns handed to a sub-listener

	faults faults // the partition seam (fault.go)
}

// Listen binds TCP and UDP on cfg.BindAddr and starts serving.
func Listen(cfg Config) (*Mux, error) {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	serverTLS, clientTLS, err := TLSConfigs(cfg.Key)
	if err != nil {
		return nil, err
	}
	tcp, udp, err := bind(cfg.BindAddr)
	if err != nil {
		return nil, err
	}
	adv, err := resolveAdvertise(cfg.AdvertiseAddr, tcp.Addr().(*net.TCPAddr))
	if err != nil {
		_ = tcp.Close()
		_ = udp.Close()
		return nil, err
	}
	if err := setUDPRecvBuf(udp); err != nil {
		logger.Warn("transport: could not enlarge UDP receive buffer", "err", err)
	}

	m := &Mux{
		log:       logger.With("component", "transport"),
		serverTLS: serverTLS,
		clientTLS: clientTLS,
		tcp:       tcp,
		udp:       udp,
		advertise: adv,
		closing:   make(chan struct{}),
		pending:   make(map[net.Conn]struct{}),
	}
	m.subs = map[byte]*subListener{
		ProtoRaft:   newSubListener(m, ProtoRaft),
		ProtoGossip: newSubListener(m, ProtoGossip),
		ProtoHTTP:   newSubListener(m, ProtoHTTP),
	}
	m.raft = &raftLayer{subListener: m.subs[ProtoRaft]}
	m.httpTr = m.newHTTPTransport()

	m.wg.Add(2)
	go m.acceptLoop()
	go m.udpLoop()
	m.log.Info("transport: listening", "bind", tcp.Addr().String(), "advertise", adv.String())
	return m, nil
}

// Addr returns the advertise address (host:port).
func (m *Mux) Addr() string { return m.advertise.String() }

// advertiseTCPAddr returns a copy of the advertise address.
func (m *Mux) advertiseTCPAddr() *net.TCPAddr {
	a := *m.advertise
	a.IP = append(net.IP(nil), m.advertise.IP...)
	return &a
}

// Listener returns the sub-listener for proto (ProtoRaft, ProtoGossip or
// ProtoHTTP), or nil for an unknown protocol byte. Each call returns the
// same listener; closing it stops routing of that protocol for good.
func (m *Mux) Listener(proto byte) net.Listener {
	s, ok := m.subs[proto]
	if !ok {
		return nil
	}
	return s
}

// HandshakeFailures returns how many inbound connections failed the TLS
// handshake (wrong key, not TLS, timeout, ...).
func (m *Mux) HandshakeFailures() uint64 { return m.handshakeFailures.Load() }

// Dial connects to the mux at addr, authenticates with TLS and selects
// proto. The context bounds the TCP dial, handshake and protocol byte; if
// it has no deadline, a 10 s limit applies. The returned conn is a
// *tls.Conn without deadlines.
func (m *Mux) Dial(ctx context.Context, addr string, proto byte) (net.Conn, error) {
	if _, ok := m.subs[proto]; !ok {
		return nil, fmt.Errorf("transport: dial %s: unknown protocol byte %q", addr, proto)
	}
	select {
	case <-m.closing:
		return nil, fmt.Errorf("transport: dial %s: %w", addr, net.ErrClosed)
	default:
	}
	if m.faults.isolated.Load() {
		return nil, fmt.Errorf("transport: dial %s: %w", addr, ErrIsolated)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, handshakeTimeout)
		defer cancel()
	}
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("transport: dial %s: %w", addr, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = raw.SetDeadline(dl) // also bounds the protocol byte write
	}
	tc := tls.Client(raw, m.clientTLS)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("transport: tls handshake with %s: %w", addr, err)
	}
	if _, err := tc.Write([]byte{proto}); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("transport: select protocol %q on %s: %w", proto, addr, err)
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("transport: clear deadline on %s: %w", addr, err)
	}
	return m.faults.track(tc), nil
}

// Close stops the listeners, closes the UDP socket, shuts down the gossip
// transport, closes idle HTTP client connections and waits for all
// goroutines. Connections already handed out are the receivers' to close.
func (m *Mux) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		m.wg.Wait()
		return nil
	}
	m.closed = true
	close(m.closing)
	pending := m.pending
	m.pending = nil
	g := m.gossip
	m.mu.Unlock()

	var errs []error
	if err := m.tcp.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		errs = append(errs, fmt.Errorf("transport: close tcp listener: %w", err))
	}
	if err := m.udp.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		errs = append(errs, fmt.Errorf("transport: close udp socket: %w", err))
	}
	for c := range pending {
		_ = c.Close()
	}
	for _, s := range m.subs {
		_ = s.Close()
	}
	if g != nil {
		_ = g.Shutdown()
	}
	m.httpTr.CloseIdleConnections()
	m.wg.Wait()
	return errors.Join(errs...)
}

func (m *Mux) isClosing() bool {
	select {
	case <-m.closing:
		return true
	default:
		return false
	}
}

// acceptLoop accepts TCP conns and hands each to its own handshake
// goroutine so a slow client cannot stall Accept.
func (m *Mux) acceptLoop() {
	defer m.wg.Done()
	var delay time.Duration
	for {
		c, err := m.tcp.Accept()
		if err != nil {
			if m.isClosing() || errors.Is(err, net.ErrClosed) {
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			m.log.Error("transport: accept failed", "err", err, "retry_in", delay)
			if !m.sleep(delay) {
				return
			}
			continue
		}
		delay = 0
		if !m.track(c) {
			_ = c.Close()
			return
		}
		m.wg.Add(1)
		go m.serveConn(c)
	}
}

// sleep waits for d or until Close; it reports false on Close.
func (m *Mux) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-m.closing:
		return false
	}
}

// track registers a handshaking conn so Close can abort it.
func (m *Mux) track(c net.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.pending[c] = struct{}{}
	return true
}

func (m *Mux) untrack(c net.Conn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pending, c)
}

// serveConn authenticates one inbound conn, reads its protocol byte and
// delivers it to the matching sub-listener.
func (m *Mux) serveConn(raw net.Conn) {
	defer m.wg.Done()
	tc, proto, err := m.serverHandshake(raw)
	m.untrack(raw)
	if err != nil {
		_ = raw.Close()
		return
	}
	s, ok := m.subs[proto]
	if !ok {
		m.log.Warn("transport: unknown protocol byte", "remote", raw.RemoteAddr().String(), "proto", proto)
		_ = tc.Close()
		return
	}
	if m.faults.isolated.Load() {
		_ = tc.Close()
		return
	}
	if !s.deliver(m.faults.track(tc)) {
		_ = tc.Close()
	}
}

func (m *Mux) serverHandshake(raw net.Conn) (*tls.Conn, byte, error) {
	remote := raw.RemoteAddr().String()
	if err := raw.SetDeadline(time.Now().Add(handshakeTimeout)); err != nil {
		return nil, 0, fmt.Errorf("transport: set handshake deadline: %w", err)
	}
	tc := tls.Server(raw, m.serverTLS)
	if err := tc.Handshake(); err != nil {
		m.handshakeFailures.Add(1)
		if !m.isClosing() {
			m.log.Warn("transport: tls handshake failed", "remote", remote, "err", err)
		}
		return nil, 0, fmt.Errorf("transport: tls handshake with %s: %w", remote, err)
	}
	var b [1]byte
	if _, err := io.ReadFull(tc, b[:]); err != nil {
		if !m.isClosing() {
			m.log.Debug("transport: no protocol byte", "remote", remote, "err", err)
		}
		return nil, 0, fmt.Errorf("transport: read protocol byte from %s: %w", remote, err)
	}
	if err := raw.SetDeadline(time.Time{}); err != nil {
		return nil, 0, fmt.Errorf("transport: clear deadline: %w", err)
	}
	return tc, b[0], nil
}

// udpLoop reads memberlist packets and hands them to the current gossip
// transport; packets arriving while there is none are dropped.
func (m *Mux) udpLoop() {
	defer m.wg.Done()
	buf := make([]byte, udpBufSize)
	var delay time.Duration
	for {
		n, from, err := m.udp.ReadFromUDP(buf)
		ts := time.Now()
		if err != nil {
			if m.isClosing() || errors.Is(err, net.ErrClosed) {
				return
			}
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			m.log.Error("transport: udp read failed", "err", err, "retry_in", delay)
			if !m.sleep(delay) {
				return
			}
			continue
		}
		delay = 0
		if n < 1 {
			continue
		}
		m.mu.Lock()
		g := m.gossip
		m.mu.Unlock()
		if g == nil || m.faults.isolated.Load() {
			continue
		}
		g.deliver(&memberlist.Packet{
			Buf:       bytes.Clone(buf[:n]),
			From:      from,
			Timestamp: ts,
		})
	}
}

// bind listens on TCP, then on UDP with the same port. With port 0 it
// retries with a fresh port if the TCP port is taken for UDP.
func bind(addr string) (*net.TCPListener, *net.UDPConn, error) {
	tcpAddr, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("transport: resolve bind address %q: %w", addr, err)
	}
	attempts := 1
	if tcpAddr.Port == 0 {
		attempts = bindAttempts
	}
	var lastErr error
	for range attempts {
		tl, err := net.ListenTCP("tcp", tcpAddr)
		if err != nil {
			return nil, nil, fmt.Errorf("transport: listen tcp %s: %w", addr, err)
		}
		bound := tl.Addr().(*net.TCPAddr)
		ul, err := net.ListenUDP("udp", &net.UDPAddr{IP: bound.IP, Port: bound.Port, Zone: bound.Zone})
		if err == nil {
			return tl, ul, nil
		}
		_ = tl.Close()
		lastErr = fmt.Errorf("transport: listen udp on port %d: %w", bound.Port, err)
	}
	return nil, nil, lastErr
}

// resolveAdvertise computes the address other nodes dial.
func resolveAdvertise(adv string, bound *net.TCPAddr) (*net.TCPAddr, error) {
	if adv != "" {
		host, portStr, err := net.SplitHostPort(adv)
		if err != nil {
			return nil, fmt.Errorf("transport: advertise address %q: %w", adv, err)
		}
		ip := net.ParseIP(host)
		if ip == nil || ip.IsUnspecified() {
			return nil, fmt.Errorf("transport: advertise address %q: host must be a specific IP address", adv)
		}
		port, err := strconv.Atoi(portStr)
		if err != nil || port < 1 || port > 65535 {
			return nil, fmt.Errorf("transport: advertise address %q: invalid port", adv)
		}
		if ip4 := ip.To4(); ip4 != nil {
			ip = ip4
		}
		return &net.TCPAddr{IP: ip, Port: port}, nil
	}
	ip := bound.IP
	zone := bound.Zone
	if ip == nil || ip.IsUnspecified() {
		ip, zone = privateIPv4(), ""
	}
	if ip4 := ip.To4(); ip4 != nil {
		ip = ip4
	}
	return &net.TCPAddr{IP: ip, Port: bound.Port, Zone: zone}, nil
}

// privateIPv4 returns a private non-loopback IPv4 address of an up
// interface, or 127.0.0.1 if there is none.
func privateIPv4() net.IP {
	ifaces, err := net.Interfaces()
	if err == nil {
		for _, ifc := range ifaces {
			if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
				continue
			}
			addrs, err := ifc.Addrs()
			if err != nil {
				continue
			}
			for _, a := range addrs {
				ipn, ok := a.(*net.IPNet)
				if !ok {
					continue
				}
				if ip4 := ipn.IP.To4(); ip4 != nil && !ip4.IsLoopback() && ip4.IsPrivate() {
					return ip4
				}
			}
		}
	}
	return net.IPv4(127, 0, 0, 1).To4()
}

// setUDPRecvBuf tries to enlarge the socket receive buffer, backing off.
func setUDPRecvBuf(c *net.UDPConn) error {
	var err error
	for size := udpRecvBufSize; size > 0; size /= 2 {
		if err = c.SetReadBuffer(size); err == nil {
			return nil
		}
	}
	return err
}
