package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/subscriptions"
)

// testRender stands for Config.Encode in the codecs' tests.
func testRender(p *subscriptions.Publication) []byte {
	return []byte(p.Pid() + " " + p.Desc)
}

// refPair is an owner's record of what one holder keeps and the holder's
// store, with one clock, read and written as the outbox and holder do.
type refPair struct {
	sent *sentRefs
	kept *keptRefs
	now  int64
}

func newRefPair(now int64) *refPair {
	return &refPair{sent: &sentRefs{instance: 7, render: testRender, counts: &counters{}}, kept: newKeptRefs(now), now: now}
}

// send passes past from the shard of lease through the pair, returning
// the holder's renderings, the bytes on the wire and the error.
func (p *refPair) send(past []subscriptions.Publication, lease string) ([][]byte, int, error) {
	b := p.sent.appendPast(nil, past, lease, p.kept.current(), p.now)
	w := wireReader{b: b}
	_, rendered, err := w.past(p.kept, p.now, nil)
	if w.bad || len(w.b) > 0 {
		return nil, len(b), fmt.Errorf("damaged: bad %v, %d bytes left", w.bad, len(w.b))
	}
	return rendered, len(b), err
}

func renders(ps []subscriptions.Publication) [][]byte {
	out := make([][]byte, len(ps))
	for i := range ps {
		out[i] = testRender(&ps[i])
	}
	return out
}

// Random replies drawn from a pool of publications of two shards, as
// the clock moves and publications expire, read back as the owner
// rendered them, in order: the first time as renderings the holder keeps,
// then by reference, and once expired never by reference again.
func TestPastByReference(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	now := int64(1e18)
	p := newRefPair(now)
	var pool []subscriptions.Publication
	for i := range 300 {
		pub := randPub(rng)
		pub.Tp = now + int64(i%150) // two shards share stamps
		pub.Tmax = now + int64(time.Duration(1+rng.Intn(120))*time.Second)
		pool = append(pool, pub)
	}
	leases := []string{"n1.1", "n1.2"}
	lease := func(i int) string { return leases[i/150] }
	var wire, full int // bytes from round 50 on, on the wire and rendered
	var results uint64
	for round := range 400 {
		p.now = now + int64(time.Duration(round)*time.Second/2)
		l := rng.Intn(2)
		var past []subscriptions.Publication
		for i := l * 150; i < (l+1)*150; i++ {
			if pool[i].Tmax >= p.now && rng.Intn(4) == 0 {
				past = append(past, pool[i])
			}
		}
		results += uint64(len(past))
		got, n, err := p.send(past, lease(l*150))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if want := renders(past); !slices.EqualFunc(got, want, bytes.Equal) {
			t.Fatalf("round %d: got %q, want %q", round, got, want)
		}
		if round >= 50 {
			wire += n
			for _, r := range got {
				full += len(r)
			}
		}
	}
	if wire > full/4 {
		t.Fatalf("%d bytes on the wire for %d bytes of renderings: not by reference", wire, full)
	}
	if c := p.sent.counts; c.pastRefs.Load()+c.pastRendered.Load() != results || c.pastRefs.Load() < results/2 {
		t.Fatalf("counted %d by number and %d rendered of %d past results", c.pastRefs.Load(), c.pastRendered.Load(), results)
	}
	// Expired publications are forgotten on both sides.
	p.now = now + int64(10*time.Minute)
	p.sent.appendPast(nil, []subscriptions.Publication{}, "n1.1", p.kept.current(), p.now)
	p.kept.mu.Lock()
	p.kept.sweep(p.now)
	p.kept.mu.Unlock()
	if p.sent.count != 0 || len(p.sent.sent) != 0 || p.sent.bytes != 0 || p.kept.len() != 0 || len(p.kept.m) != 0 {
		t.Fatalf("after every publication expired: the owner records %d (%d bytes), the holder keeps %d", p.sent.count, p.sent.bytes, p.kept.len())
	}
}

// The holder keeps a publication for refMargin past its expiry by its
// own clock, so an owner whose clock runs behind still finds it there.
func TestKeptPastExpiryForSkew(t *testing.T) {
	now := int64(1e18)
	p := newRefPair(now)
	pub := subscriptions.Publication{Uid: "u", Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: []uint32{1, 2}}, Tp: now, Tmax: now + int64(time.Second), Desc: "d"}
	if _, _, err := p.send([]subscriptions.Publication{pub}, "l"); err != nil {
		t.Fatal(err)
	}
	p.kept.mu.Lock()
	p.kept.sweep(pub.Tmax + int64(refMargin)/2) // expired, within the margin
	p.kept.mu.Unlock()
	got, _, err := p.send([]subscriptions.Publication{pub}, "l") // the owner's clock: still now
	if err != nil || len(got) != 1 || string(got[0]) != string(testRender(&pub)) {
		t.Fatalf("within the margin: %q, %v", got, err)
	}
}

// A holder that lost what it kept fails the reply naming it, starts a new
// epoch, and the owner, told by the next request, sends renderings again.
func TestLostRefStartsEpoch(t *testing.T) {
	now := int64(1e18)
	p := newRefPair(now)
	past := []subscriptions.Publication{{Uid: "a", Tp: now, Tmax: now + int64(time.Hour), Desc: "x"}, {Uid: "b", Tp: now + 1, Tmax: now + int64(time.Hour), Desc: "y"}}
	if _, _, err := p.send(past, "l"); err != nil {
		t.Fatal(err)
	}
	// The holder forgets (a restart, a message lost) but the owner does
	// not know yet: its next reply names what is gone.
	clear(p.kept.m)
	_, _, err := p.send(past, "l")
	if !errors.Is(err, errLostRef) {
		t.Fatalf("a reference to what the holder lost: %v, want errLostRef", err)
	}
	before := p.kept.current()
	p.kept.lost(now)
	if p.kept.current() <= before {
		t.Fatalf("epoch %d after %d: want it to grow", p.kept.current(), before)
	}
	got, _, err := p.send(past, "l")
	if err != nil || !slices.EqualFunc(got, renders(past), bytes.Equal) {
		t.Fatalf("after the new epoch: %q, %v", got, err)
	}
}

// Past its bounds an owner sends renderings the holder does not keep.
func TestSentRefsBounded(t *testing.T) {
	defer func(n int) { maxSentRefs = n }(maxSentRefs)
	maxSentRefs = 3
	now := int64(1e18)
	p := newRefPair(now)
	var past []subscriptions.Publication
	for i := range 5 {
		past = append(past, subscriptions.Publication{Uid: "u", Tp: now + int64(i), Tmax: now + int64(time.Hour), Desc: fmt.Sprint(i)})
	}
	for range 2 {
		got, _, err := p.send(past, "l")
		if err != nil || !slices.EqualFunc(got, renders(past), bytes.Equal) {
			t.Fatalf("%q, %v", got, err)
		}
	}
	if p.sent.count != 3 || p.kept.len() != 3 {
		t.Fatalf("the owner records %d, the holder keeps %d: want 3", p.sent.count, p.kept.len())
	}
}

// A reply with references reads back through the whole codec, and every
// cut of it is an error, never a panic.
func TestReplyWithRefsDamaged(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	sent := &sentRefs{instance: 3, render: testRender, counts: &counters{}}
	kept := newKeptRefs(0)
	for range 20 {
		r := &reply{Sid: "s", Node: "n1.1", SubR: &subscriptions.SubscribeResult{Sub: randSub(rng), Past: randPubs(rng)}}
		for i := range r.SubR.Past {
			r.SubR.Past[i].Tmax = time.Now().Add(time.Hour).UnixNano()
		}
		b := encodeReply(r, sent)
		got, err := decodeReply(b, kept)
		if err != nil {
			t.Fatal(err)
		}
		if r.SubR.Past != nil && !slices.EqualFunc(got.SubR.Rendered, renders(r.SubR.Past), bytes.Equal) {
			t.Fatalf("got %q, want the renderings of %v", got.SubR.Rendered, r.SubR.Past)
		}
		for n := range len(b) {
			if _, err := decodeReply(b[:n], kept); !errors.Is(err, errBadReply) && !errors.Is(err, errLostRef) {
				t.Fatalf("cut at %d of %d: %v", n, len(b), err)
			}
		}
	}
}

// A holder reads a reply whose caller gave up all the same: the
// renderings it asks to keep are named by later replies.
func TestRepliesToGoneCallsStillKeep(t *testing.T) {
	h := newHolder(&Node{})
	sent := &sentRefs{instance: 9, render: testRender, counts: &counters{}}
	tmax := time.Now().Add(time.Hour).UnixNano()
	past := []subscriptions.Publication{{Uid: "a", Tp: 1, Tmax: tmax, Desc: "x"}, {Uid: "b", Tp: 2, Tmax: tmax, Desc: "y"}}
	r := &reply{Sid: "s", Node: "n1.1", SubR: &subscriptions.SubscribeResult{Sub: randSub(rand.New(rand.NewSource(5))), Past: past}}
	h.replied("gone", encodeReply(r, sent), false) // no such call
	c := &call{done: make(chan *reply, 1)}
	h.calls["c2"] = c
	h.replied("c2", encodeReply(r, sent), false)
	got := <-c.done
	if got.Err != nil || !slices.EqualFunc(got.SubR.Rendered, renders(past), bytes.Equal) {
		t.Fatalf("the second reply: %+v, %+v", got.Err, got.SubR)
	}
	if sent.counts.pastRefs.Load() != 2 {
		t.Fatalf("%d sent by number the second time, want 2", sent.counts.pastRefs.Load())
	}
}
