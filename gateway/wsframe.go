package gateway

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The client side of RFC 6455 framing, which the broker parses itself
// rather than through gorilla/websocket: its reader keeps a 4 KiB buffer
// per connection for as long as the connection lives, where this parser
// works in a buffer borrowed only while bytes wait (wsread.go).

// Opcodes (RFC 6455 section 5.2).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xA
)

// Close codes for a client that breaks the protocol.
const (
	closeProtocolError = 1002
	closeTooBig        = 1009
)

// frameError is a violation of the protocol: the connection closes with
// code and reason.
type frameError struct {
	code   int
	reason string
}

func (e *frameError) Error() string { return fmt.Sprintf("websocket: %s (close %d)", e.reason, e.code) }

func protocolError(format string, args ...any) *frameError {
	return &frameError{code: closeProtocolError, reason: fmt.Sprintf(format, args...)}
}

// errShort says the buffer ends inside a frame.
var errShort = errors.New("websocket: partial frame")

// wsFrame is one parsed frame; payload is unmasked in place, inside the
// buffer it was parsed from.
type wsFrame struct {
	fin     bool
	op      byte
	payload []byte
}

// parseFrame parses the frame at the start of b, unmasking its payload in
// place, and returns it with the bytes it took. It fails with errShort
// when b ends inside the frame (need, when known, is how many bytes the
// whole frame takes), and with a *frameError when the client breaks the
// protocol or sends a payload over max.
func parseFrame(b []byte, max int) (f wsFrame, n int, need int, err error) {
	if len(b) < 2 {
		return f, 0, 0, errShort
	}
	b0, b1 := b[0], b[1]
	if b0&0x70 != 0 {
		return f, 0, 0, protocolError("reserved bits set: no extension was negotiated")
	}
	f.fin, f.op = b0&0x80 != 0, b0&0x0f
	switch f.op {
	case opContinuation, opText, opBinary:
	case opClose, opPing, opPong:
		if !f.fin {
			return f, 0, 0, protocolError("fragmented control frame")
		}
	default:
		return f, 0, 0, protocolError("unknown opcode %d", f.op)
	}
	if b1&0x80 == 0 {
		return f, 0, 0, protocolError("unmasked client frame")
	}
	size, hdr := uint64(b1&0x7f), 2
	switch size {
	case 126:
		if len(b) < 4 {
			return f, 0, 0, errShort
		}
		size, hdr = uint64(binary.BigEndian.Uint16(b[2:])), 4
	case 127:
		if len(b) < 10 {
			return f, 0, 0, errShort
		}
		size, hdr = binary.BigEndian.Uint64(b[2:]), 10
		if size>>63 != 0 {
			return f, 0, 0, protocolError("payload length with the top bit set")
		}
	}
	if f.op >= opClose && size > 125 {
		return f, 0, 0, protocolError("control frame over 125 bytes")
	}
	if size > uint64(max) {
		return f, 0, 0, &frameError{code: closeTooBig, reason: fmt.Sprintf("frame of %d bytes, over %d", size, max)}
	}
	total := hdr + 4 + int(size)
	if len(b) < total {
		return f, 0, total, errShort
	}
	mask := b[hdr : hdr+4]
	f.payload = b[hdr+4 : total]
	for i := range f.payload {
		f.payload[i] ^= mask[i&3]
	}
	return f, total, total, nil
}

// message joins data frames into messages, never past max bytes.
type message struct {
	max  int
	open bool // a fragmented message has begun
	buf  []byte
	op   byte // the opcode of the message begun last: text or binary
}

// add takes a data frame and returns the message it completes, if any.
// A message that grows past max fails with a *frameError.
func (m *message) add(f wsFrame) ([]byte, error) {
	switch {
	case f.op == opContinuation && !m.open:
		return nil, protocolError("continuation frame without a message")
	case f.op != opContinuation && m.open:
		return nil, protocolError("new message before the last one ended")
	}
	if !m.open {
		m.op = f.op
	}
	if !m.open && f.fin {
		return f.payload, nil // the usual case: one frame, no copy
	}
	if len(m.buf)+len(f.payload) > m.max {
		return nil, &frameError{code: closeTooBig, reason: fmt.Sprintf("message over %d bytes", m.max)}
	}
	m.buf = append(m.buf, f.payload...)
	m.open = !f.fin
	if m.open {
		return nil, nil
	}
	out := m.buf
	m.buf = nil
	return out, nil
}
