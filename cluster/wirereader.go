package cluster

import (
	"encoding/binary"
	"math"
)

// The pieces every message between nodes is made of (requestcodec.go,
// replycodec.go, wire.go): varints, length-prefixed bytes, and lists whose
// length is 0 for nil, else the count + 1.

// flagSet gathers a message's flags.
type flagSet byte

func (f *flagSet) set(bit byte, on bool) {
	if on {
		*f |= flagSet(bit)
	}
}

// wireReader reads the varints and length-prefixed bytes of a message
// from another node. A read past the end sets bad and returns zeros, so a
// decoder checks once, at its end.
type wireReader struct {
	b   []byte
	bad bool
}

func (w *wireReader) byte() byte {
	if len(w.b) == 0 {
		w.bad = true
		return 0
	}
	c := w.b[0]
	w.b = w.b[1:]
	return c
}

func (w *wireReader) uvarint() uint64 {
	v, k := binary.Uvarint(w.b)
	if k <= 0 {
		w.bad, w.b = true, nil
		return 0
	}
	w.b = w.b[k:]
	return v
}

func (w *wireReader) varint() int64 {
	v, k := binary.Varint(w.b)
	if k <= 0 {
		w.bad, w.b = true, nil
		return 0
	}
	w.b = w.b[k:]
	return v
}

// count reads a number of things (matches, notifications) that stay
// home or follow in other messages.
func (w *wireReader) count() int {
	v := w.uvarint()
	if v > math.MaxInt32 {
		w.bad, w.b = true, nil
		return 0
	}
	return int(v)
}

func (w *wireReader) bytes() []byte {
	l := w.uvarint()
	if l > uint64(len(w.b)) {
		w.bad, w.b = true, nil
		return nil
	}
	x := w.b[:l:l]
	w.b = w.b[l:]
	return x
}

func (w *wireReader) str() string { return string(w.bytes()) }

// list reads the length of a list (0 for nil, else its length + 1):
// ok is false for nil, and for a length longer than what is left, since
// each element takes a byte at least.
func (w *wireReader) list() (n int, ok bool) {
	v := w.uvarint()
	if v == 0 || w.bad {
		return 0, false
	}
	if v-1 > uint64(len(w.b)) {
		w.bad, w.b = true, nil
		return 0, false
	}
	return int(v - 1), true
}
