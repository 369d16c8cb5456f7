//go:build !linux

package filehttp

import "net"

// writeHeadMore writes a response head; MSG_MORE is Linux's.
func writeHeadMore(c net.Conn, b []byte) error {
	_, err := c.Write(b)
	return err
}
