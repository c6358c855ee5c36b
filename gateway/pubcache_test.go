package gateway

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// benchPub is publication i as the store hands it over: decoded afresh,
// its strings its own.
func benchPub(i int) *subscriptions.Publication {
	return &subscriptions.Publication{Tp: int64(i), Tmax: int64(i) + 20e9, Uid: "user-" + strconv.Itoa(i%10000),
		Desc: "accident near the corner #abcdef." + strconv.Itoa(i),
		Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{1, 2, 3, 0, 1, 2, 3, 3, 2, 1, 0, 1, uint32(i % 4)}}}
}

// BenchmarkPubCacheHit is a past result's lookup in a full cache: the
// publication just decoded, the rendering copied out as a reply does.
//
//	go test ./gateway -run '^$' -bench PubCacheHit
func BenchmarkPubCacheHit(b *testing.B) {
	const n = pubCacheEntries
	c := newPubCache(pubCacheEntries, pubCacheBytes)
	for i := range n {
		c.get(benchPub(i), func() []byte { return make([]byte, 250+i%100) })
	}
	rng := rand.New(rand.NewSource(1))
	out := make([]byte, 0, 1<<20)
	b.ResetTimer()
	for range b.N {
		body := c.get(benchPub(rng.Intn(n)), func() []byte { panic("miss") })
		out = append(out[:len(out)%(1<<19)], body...)
	}
}

// TestPubCacheTellsPublicationsApart: a cached rendering comes back for
// the publication it was rendered from, and for no publication of its
// stamp that differs in expiry, namespace, uid, description or cell
// (random ones, against comparing the fields).
func TestPubCacheTellsPublicationsApart(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	str := func() string {
		b := make([]byte, rng.Intn(4))
		for i := range b {
			b[i] = byte('a' + rng.Intn(2))
		}
		return string(b)
	}
	pub := func() *subscriptions.Publication {
		id := make(dewey.ID, rng.Intn(3))
		for i := range id {
			id[i] = uint32(rng.Intn(2))
		}
		return &subscriptions.Publication{Tp: 1, Tmax: int64(rng.Intn(2)), Uid: str(), Desc: str(),
			Cell: subscriptions.Cell{NS: subscriptions.Namespace(rng.Intn(2)), ID: id}}
	}
	same := func(a, b *subscriptions.Publication) bool {
		return a.Tmax == b.Tmax && a.Uid == b.Uid && a.Desc == b.Desc && a.Cell.NS == b.Cell.NS && a.Cell.ID.Equal(b.Cell.ID)
	}
	matched := 0
	for range 20000 {
		c := newPubCache(4, 1<<20)
		a, b := pub(), pub()
		c.get(a, func() []byte { return []byte("a") })
		if got := string(c.get(a, func() []byte { return []byte("again") })); got != "a" {
			t.Fatalf("%+v: its own rendering came back as %q", a, got)
		}
		got := string(c.get(b, func() []byte { return []byte("b") }))
		if want := map[bool]string{true: "a", false: "b"}[same(a, b)]; got != want {
			t.Fatalf("%+v after %+v: %q, want %q", b, a, got, want)
		}
		if same(a, b) {
			matched++
		}
	}
	if matched == 0 {
		t.Fatal("no pair alike: the test tells nothing")
	}
}

// BenchmarkPubCacheHitAll is BenchmarkPubCacheHit's lookups a reply's
// worth at a time (getAll), per publication.
//
//	go test ./gateway -run '^$' -bench PubCacheHit
func BenchmarkPubCacheHitAll(b *testing.B) {
	const n, reply = pubCacheEntries, 32
	c := newPubCache(pubCacheEntries, pubCacheBytes)
	for i := range n {
		c.get(benchPub(i), func() []byte { return make([]byte, 250+i%100) })
	}
	rng := rand.New(rand.NewSource(1))
	out := make([]byte, 0, 1<<20)
	ps := make([]subscriptions.Publication, reply)
	bodies := make([][]byte, reply)
	b.ResetTimer()
	for k := 0; k < b.N; k += reply {
		for i := range ps {
			ps[i] = *benchPub(rng.Intn(n))
		}
		c.getAll(ps, bodies, func(*subscriptions.Publication) []byte { panic("miss") })
		for _, body := range bodies {
			out = append(out[:len(out)%(1<<19)], body...)
		}
	}
}

// TestPubCacheAgainstRendering: whatever get and getAll, mixed, hand back
// is the rendering of the publication asked for (the oracle renders it
// afresh), among publications that share stamps; the cache keeps to its
// bounds; and it does cache: asking again for what it holds renders
// nothing.
func TestPubCacheAgainstRendering(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	render := func(p *subscriptions.Publication) []byte {
		return []byte(fmt.Sprintf("%d|%d|%s|%s|%d|%v", p.Tp, p.Tmax, p.Uid, p.Desc, p.Cell.NS, p.Cell.ID))
	}
	pub := func() subscriptions.Publication {
		tp := int64(rng.Intn(300))
		return subscriptions.Publication{Tp: tp, Tmax: tp + int64(rng.Intn(2)), Uid: "u" + strconv.Itoa(rng.Intn(2)),
			Desc: strings.Repeat("d", rng.Intn(40)), Cell: subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.ID{uint32(rng.Intn(2))}}}
	}
	const maxN, maxBytes = 64, 2000
	c := newPubCache(maxN, maxBytes)
	renders := 0
	asked := map[string]subscriptions.Publication{} // by rendering
	counted := func(p *subscriptions.Publication) []byte { renders++; asked[string(render(p))] = *p; return render(p) }
	for range 20000 {
		if rng.Intn(2) == 0 {
			p := pub()
			if got, want := c.get(&p, func() []byte { return counted(&p) }), render(&p); string(got) != string(want) {
				t.Fatalf("get %+v: %q, want %q", p, got, want)
			}
		} else {
			ps := make([]subscriptions.Publication, rng.Intn(40))
			for i := range ps {
				ps[i] = pub()
			}
			out := make([][]byte, len(ps))
			c.getAll(ps, out, counted)
			for i := range ps {
				if want := render(&ps[i]); string(out[i]) != string(want) {
					t.Fatalf("getAll %+v: %q, want %q", ps[i], out[i], want)
				}
			}
		}
		if len(c.m) > maxN || c.bytes > maxBytes {
			t.Fatalf("%d entries, %d bytes: over the bounds %d, %d", len(c.m), c.bytes, maxN, maxBytes)
		}
	}
	held := make([]subscriptions.Publication, 0, len(c.m))
	for _, tp := range c.order[c.head:] {
		held = append(held, asked[string(c.m[tp].b)])
	}
	before := renders
	c.getAll(held, make([][]byte, len(held)), counted)
	if len(held) == 0 || renders != before {
		t.Fatalf("asked again for the %d publications it holds, the cache rendered %d", len(held), renders-before)
	}
	c = newPubCache(maxN, 1<<20)
	c.getAll(held, make([][]byte, len(held)), counted)
	before = renders
	c.getAll(held, make([][]byte, len(held)), counted)
	if renders != before {
		t.Fatalf("getAll cached none of %d: asked again, it rendered %d", len(held), renders-before)
	}
}
