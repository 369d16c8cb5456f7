package filehttp

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// sendFileAt sends a head, then exactly the bytes [off, off+n) of a
// shared file (as a small file's content inside its segment), whatever the
// file's own offset, and waits for a client slower than the socket's buffers.
func TestSendFileAt(t *testing.T) {
	data := make([]byte, 4<<20)
	rand.Read(data)
	name := filepath.Join(t.TempDir(), "seg")
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(12345, io.SeekStart); err != nil { // must not matter
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	head := []byte("HTTP/1.1 200 OK\r\n\r\n") // sent first, with MSG_MORE
	for _, tc := range []struct {
		off, n int64
		slow   bool
	}{
		{0, 1, false},
		{68, 16<<10 + 1, false},
		{4097, 64 << 10, false},
		{1 << 20, 64<<10 - 1, false},
		{123, 3 << 20, true}, // more than the socket buffers hold: sendfile waits
	} {
		t.Run(fmt.Sprintf("%d+%d", tc.off, tc.n), func(t *testing.T) {
			client, server := tcpPair(t, ln)
			if tc.slow {
				// Buffers far smaller than the send: sendfile must wait for
				// the client, and has not returned before the client reads.
				client.(*net.TCPConn).SetReadBuffer(16 << 10)
				server.SetWriteBuffer(16 << 10)
			}
			sent := make(chan error, 1)
			go func() { sent <- sendFileAt(server, head, f, tc.off, tc.n) }()
			client.SetReadDeadline(time.Now().Add(10 * time.Second))
			if tc.slow {
				time.Sleep(50 * time.Millisecond) // the sender fills the buffers and waits
				select {
				case err := <-sent:
					t.Fatalf("sendFileAt returned (%v) before the client read %d bytes: it did not wait", err, tc.n)
				default:
				}
			}
			got := make([]byte, int64(len(head))+tc.n)
			if _, err := io.ReadFull(client, got); err != nil {
				t.Fatalf("read: %v", err)
			}
			if err := <-sent; err != nil {
				t.Fatalf("sendFileAt: %v", err)
			}
			if !bytes.Equal(got[:len(head)], head) || !bytes.Equal(got[len(head):], data[tc.off:tc.off+tc.n]) {
				t.Fatal("the bytes sent differ from the head and the file's")
			}
			if pos, _ := f.Seek(0, io.SeekCurrent); pos != 12345 {
				t.Errorf("the file's offset moved to %d", pos)
			}
		})
	}
	t.Run("past the end", func(t *testing.T) {
		client, server := tcpPair(t, ln)
		go io.Copy(io.Discard, client)
		if err := sendFileAt(server, nil, f, int64(len(data))-10, 20); err == nil {
			t.Fatal("sending past the file's end reported no error")
		}
	})
}

// tcpPair connects a client to ln and returns both ends, closed when the
// test ends.
func tcpPair(t *testing.T, ln net.Listener) (client net.Conn, server *net.TCPConn) {
	t.Helper()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return client, c.(*net.TCPConn)
}

// memSender sends a head and a body from memory exactly, on a socket
// that takes them at once or one too small for them (it waits for the
// client), and on one connection answer after answer; a client gone is an
// error, not a hang.
func TestMemSender(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	body := make([]byte, 3<<20)
	rand.Read(body)
	head := []byte("HTTP/1.1 200 OK\r\n\r\n")
	for _, tc := range []struct {
		name       string
		head, body []byte
		slow       bool
	}{
		{"head only", head, nil, false},
		{"head and 64 KiB", head, body[:64<<10], false},
		{"body only", nil, body[:100], false},
		{"more than the buffers hold", head, body, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := tcpPair(t, ln)
			if tc.slow {
				client.(*net.TCPConn).SetReadBuffer(16 << 10)
				server.SetWriteBuffer(16 << 10)
			}
			var out memSender
			const answers = 3
			sent := make(chan error, 1)
			go func() {
				for range answers {
					if err := out.write(server, tc.head, tc.body); err != nil {
						sent <- err
						return
					}
				}
				sent <- nil
			}()
			client.SetReadDeadline(time.Now().Add(10 * time.Second))
			want := append(append([]byte(nil), tc.head...), tc.body...)
			for i := range answers {
				got := make([]byte, len(want))
				if _, err := io.ReadFull(client, got); err != nil {
					t.Fatalf("answer %d: read: %v", i, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("answer %d: the bytes sent differ from the head and body", i)
				}
			}
			if err := <-sent; err != nil {
				t.Fatalf("write: %v", err)
			}
		})
	}
	t.Run("client gone", func(t *testing.T) {
		client, server := tcpPair(t, ln)
		client.Close()
		var out memSender
		done := make(chan error, 1)
		go func() {
			var err error
			for i := 0; err == nil && i < 100; i++ { // the first writes may still be taken
				err = out.write(server, head, body[:64<<10])
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil {
				t.Fatal("writing to a closed client reported no error")
			}
		case <-time.After(10 * time.Second):
			t.Fatal("writing to a closed client did not return")
		}
	})
}

// A socket reader gives what the client sends, waits for what it has not
// sent yet, ends with the connection's read deadline (a timeout, as
// net.Conn's) and reports the client's close as io.EOF.
func TestSockReader(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, server := tcpPair(t, ln)
	r := newSockReader(server)
	server.SetReadDeadline(time.Now().Add(10 * time.Second))
	read := func(want string) {
		t.Helper()
		got := make([]byte, len(want))
		if _, err := io.ReadFull(r, got); err != nil || string(got) != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	client.Write([]byte("GET /files/a HTTP/1.1\r\n\r\n"))
	read("GET /files/a HTTP/1.1\r\n\r\n")
	go func() {
		time.Sleep(20 * time.Millisecond) // the reader waits in the poller meanwhile
		client.Write([]byte("later"))
	}()
	read("later")

	server.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err = r.Read(make([]byte, 8))
	if !isTimeout(err) {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	server.SetReadDeadline(time.Now().Add(10 * time.Second))
	client.Write([]byte("x"))
	client.Close()
	read("x")
	if n, err := r.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("read after the client closed: %d, %v; want 0, EOF", n, err)
	}
}
