package gateway

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"strings"
	"testing"
)

// failingConn takes budget bytes, then fails every write.
type failingConn struct {
	net.Conn
	got    bytes.Buffer
	budget int
}

var errBroken = errors.New("broken pipe")

func (c *failingConn) Write(p []byte) (int, error) {
	n := min(len(p), c.budget)
	c.got.Write(p[:n])
	c.budget -= n
	if n < len(p) {
		return n, errBroken
	}
	return n, nil
}

// A list frame is on the wire the frame of withArray's reply, whatever
// the sizes; when the connection fails part way, what went out, what the
// stallWriter kept and the tail writeFrame returns are that frame whole.
// The oracle is withArray.
func TestListFrameIsWithArraysFrame(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for round := range 300 {
		head := []byte(fmt.Sprintf(`{"id":"%d","op":"subscribed","sid":"s-1.2"}`, round))
		items := make([][]byte, rng.Intn(40))
		for i := range items {
			items[i] = []byte(fmt.Sprintf(`{"pid":"p%d","desc":"%s"}`, i, strings.Repeat("x", rng.Intn(3000))))
		}
		want := appendFrameHead(nil, 1, len(withArray(head, "results", items)))
		want = append(want, withArray(head, "results", items)...)

		prefix := append(append([]byte(nil), head[:len(head)-1]...), `,"results":[`...)
		f := frame{data: prefix, list: items}
		if f.size() != len(want)-len(appendFrameHead(nil, 1, f.size())) {
			t.Fatalf("round %d: size %d", round, f.size())
		}
		budget := len(want) + 1
		if round%2 == 1 {
			budget = rng.Intn(len(want))
		}
		conn := &failingConn{budget: budget}
		sw := &stallWriter{conn: conn}
		w := bufio.NewWriterSize(sw, 4096)
		// A notification ahead, so the list frame starts part way into the
		// buffer.
		w.WriteString("ahead")
		tail, err := writeFrames(w, []frame{f}, true)
		if err == nil {
			err = w.Flush()
		}
		got := append(append(conn.got.Bytes(), sw.rest...), tail...)
		if !bytes.Equal(got[len("ahead"):], want) {
			t.Fatalf("round %d (budget %d of %d, err %v): %d bytes, want %d", round, budget, len(want), err, len(got)-5, len(want))
		}
		if (err != nil) != (budget < len(want)+len("ahead")) {
			t.Fatalf("round %d: err %v with budget %d", round, err, budget)
		}
	}
}
