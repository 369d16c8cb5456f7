package holder

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Frame types. Client to holder: hello, input, resize, status, kill.
// Holder to client: screen, output, notice, status, exit.
const (
	FrameHello  byte = 'h'
	FrameInput  byte = 'i'
	FrameResize byte = 'r'
	FrameStatus byte = 's'
	FrameKill   byte = 'k'
	FrameNotice byte = 'n'

	FrameScreen byte = 'S'
	FrameOutput byte = 'o'
	FrameExit   byte = 'x'
)

// MaxFrame bounds a frame's payload: a larger one is a broken peer.
const MaxFrame = 1 << 20

// ErrFrameTooLarge: a frame announced more than MaxFrame bytes.
var ErrFrameTooLarge = errors.New("holder: frame too large")

// writeFrame writes one frame. It is not safe for concurrent use on one w.
func writeFrame(w io.Writer, typ byte, payload []byte) error {
	if len(payload) > MaxFrame {
		return ErrFrameTooLarge
	}
	var h [5]byte
	h[0] = typ
	binary.BigEndian.PutUint32(h[1:], uint32(len(payload)))
	if _, err := w.Write(append(h[:], payload...)); err != nil {
		return err
	}
	return nil
}

// readFrame reads one frame into a new buffer.
func readFrame(r io.Reader) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > MaxFrame {
		return 0, nil, fmt.Errorf("%w: %d bytes", ErrFrameTooLarge, n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, err
	}
	return h[0], p, nil
}

// Size is a terminal's size in cells.
type Size struct {
	Cols uint16 `json:"cols"`
	Rows uint16 `json:"rows"`
}

// Size limits: a client asking for more gets the most; 0 is no size.
const (
	MaxCols = 1000
	MaxRows = 500
)

// Clamp returns s within the limits, and false when s is no size at all
// (a zero dimension).
func (s Size) Clamp() (Size, bool) {
	if s.Cols == 0 || s.Rows == 0 {
		return s, false
	}
	return Size{Cols: min(s.Cols, MaxCols), Rows: min(s.Rows, MaxRows)}, true
}

func (s Size) bytes() []byte {
	var b [4]byte
	binary.BigEndian.PutUint16(b[:], s.Cols)
	binary.BigEndian.PutUint16(b[2:], s.Rows)
	return b[:]
}

func parseSize(p []byte) (Size, error) {
	if len(p) != 4 {
		return Size{}, fmt.Errorf("holder: a size is 4 bytes, got %d", len(p))
	}
	return Size{Cols: binary.BigEndian.Uint16(p), Rows: binary.BigEndian.Uint16(p[2:])}, nil
}

// Hello modes.
const (
	ModeAttach  byte = 'a'
	ModeControl byte = 'c'
)
