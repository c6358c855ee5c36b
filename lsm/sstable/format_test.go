package sstable

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/golang/snappy"
)

// randomBlock is a block's worth of the shapes tables hold: runs of shared
// key bytes, repeated fragments and random bytes.
func randomBlock(rng *rand.Rand) []byte {
	var b []byte
	n := 1 + rng.IntN(8192)
	for len(b) < n {
		switch rng.IntN(3) {
		case 0:
			b = append(b, bytes.Repeat([]byte{byte(rng.IntN(4))}, 1+rng.IntN(40))...)
		case 1:
			if len(b) > 0 {
				at := rng.IntN(len(b))
				b = append(b, b[at:min(len(b), at+4+rng.IntN(60))]...)
			}
		default:
			for range 1 + rng.IntN(50) {
				b = append(b, byte(rng.Uint32()))
			}
		}
	}
	return b[:n]
}

// TestBlocksAreStandardSnappy checks the stored form against the reference
// snappy implementation both ways: what this package compresses, golang/snappy
// decodes, and what golang/snappy compresses, this package reads. Tables
// written before the encoder changed stay readable.
func TestBlocksAreStandardSnappy(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	compressed := 0
	for i := range 2000 {
		raw := randomBlock(rng)
		stored, _ := encodeBlock(raw, Snappy, nil)
		payload, typ := stored[:len(stored)-trailerLen], stored[len(stored)-trailerLen]
		if typ == compressionSnappy {
			compressed++
			got, err := snappy.Decode(nil, payload)
			if err != nil || !bytes.Equal(got, raw) {
				t.Fatalf("block %d: golang/snappy cannot read what encodeBlock wrote (err %v)", i, err)
			}
		} else if !bytes.Equal(payload, raw) {
			t.Fatalf("block %d: an uncompressed block is not stored as it is", i)
		}

		// A block compressed by the reference encoder, with its trailer.
		ref := appendTrailer(snappy.Encode(nil, raw), compressionSnappy)
		got, err := decodeBlock(ref, nil, "t", 0)
		if err != nil || !bytes.Equal(got, raw) {
			t.Fatalf("block %d: a golang/snappy block does not decode (err %v)", i, err)
		}
	}
	if compressed < 500 {
		t.Fatalf("only %d of 2000 blocks compressed: the test exercises too little", compressed)
	}
}
