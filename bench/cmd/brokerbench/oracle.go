package main

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seed84792017/cellcast/client"
	"github.com/seed84792017/cellcast/dewey"
)

// stamp reads the broker stamp that begins a sid or pid.
func stamp(id string) int64 {
	i := strings.IndexByte(id, '-')
	if i <= 0 {
		return 0
	}
	t, _ := strconv.ParseInt(id[:i], 36, 64)
	return t
}

type pair struct{ ts, tp int64 } // a subscription's and a publication's stamps

type subRec struct {
	ts, tmin, tmax int64
	cell           dewey.ID
}

type pubRec struct {
	tp, tmax int64
	cell     dewey.ID
}

// book is what the replies told: the oracle's input.
type book struct {
	mu       sync.Mutex
	subs     []subRec
	pubs     []pubRec
	pastGot  []pair
	errors   map[string]int
	pubTimes []int64 // when each live publication was answered
}

func (b *book) fail(err error) {
	b.mu.Lock()
	b.errors[err.Error()]++
	b.mu.Unlock()
}

func (b *book) subscribed(s *client.Subscription) {
	ts := stamp(s.Sid)
	r := subRec{ts: ts, tmin: ts - int64(*past), tmax: s.ExpiresAt.UnixNano(), cell: dewey.MustParse(s.Cell)}
	b.mu.Lock()
	b.subs = append(b.subs, r)
	for _, p := range s.Past {
		b.pastGot = append(b.pastGot, pair{ts, stamp(p.Pid)})
	}
	b.mu.Unlock()
}

func (b *book) published(p *client.Published, live bool) {
	r := pubRec{tp: stamp(p.Pid), tmax: p.ExpiresAt.UnixNano(), cell: dewey.MustParse(p.Cell)}
	b.mu.Lock()
	b.pubs = append(b.pubs, r)
	if live {
		b.pubTimes = append(b.pubTimes, time.Now().UnixNano())
	}
	b.mu.Unlock()
}

// expected computes every (subscription, publication) pair the broker
// owes: live (published after the subscription, within its window) and
// past (published before it, within its past window, not expired then).
func expected(bk *book) (live, pastPairs []pair) {
	byCell := map[string][]int{}
	keys := make([]string, 0, len(bk.subs))
	for i, s := range bk.subs {
		k := string(s.cell.Encode())
		if _, ok := byCell[k]; !ok {
			keys = append(keys, k)
		}
		byCell[k] = append(byCell[k], i)
	}
	sort.Strings(keys)
	for _, p := range bk.pubs {
		check := func(i int) {
			s := &bk.subs[i]
			switch {
			case s.ts < p.tp && p.tp <= s.tmax:
				live = append(live, pair{s.ts, p.tp})
			case s.tmin <= p.tp && p.tp < s.ts && p.tmax >= s.ts:
				pastPairs = append(pastPairs, pair{s.ts, p.tp})
			}
		}
		lo, hi := p.cell.SubtreeRange()
		for j := sort.SearchStrings(keys, string(lo)); j < len(keys) && keys[j] < string(hi); j++ {
			for _, i := range byCell[keys[j]] {
				check(i)
			}
		}
		for _, a := range p.cell.Ancestors() {
			for _, i := range byCell[string(a.Encode())] {
				check(i)
			}
		}
	}
	return live, pastPairs
}

type comparison struct{ want, missing, dup, extra int }

func (c comparison) String() string {
	if c.missing+c.dup+c.extra == 0 {
		return fmt.Sprintf("100%% of %d", c.want)
	}
	return fmt.Sprintf("%.3f%% of %d (missing %d, twice %d, extra %d)", 100*float64(c.want-c.missing)/float64(max(1, c.want)), c.want, c.missing, c.dup, c.extra)
}

func cmpPair(a, b pair) int {
	if a.ts != b.ts {
		return compareInt(a.ts, b.ts)
	}
	return compareInt(a.tp, b.tp)
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compare(want, got []pair) comparison {
	slices.SortFunc(want, cmpPair)
	slices.SortFunc(got, cmpPair)
	c := comparison{want: len(want)}
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j > 0 && j < len(got) && got[j] == got[j-1]:
			c.dup++
			j++
		case j == len(got) || i < len(want) && cmpPair(want[i], got[j]) < 0:
			c.missing++
			i++
		case i == len(want) || cmpPair(want[i], got[j]) > 0:
			c.extra++
			j++
		default:
			i++
			j++
		}
	}
	return c
}
