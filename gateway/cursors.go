package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Cursor store bounds (docs/protocol.md, "Paged results").
const (
	CursorTTL        = 60 * time.Second // after the cursor's last use
	cursorMaxEntries = 4096
	cursorMaxBytes   = 64 << 20
	cursorPerUser    = 16
)

// cursorLen is the longest cursor: 32 hex digits, a dot, a page number.
const cursorLen = 32 + 1 + maxPageDigits

// cursorStore holds the pages of paged replies that clients pull, bounded
// in entries, in bytes and per user, each entry living CursorTTL after its
// last use. Past a bound the entries closest to expiry go first; the
// newest entry always stays, so a reply is never refused for its size.
type cursorStore struct {
	now func() time.Time

	mu      sync.Mutex
	entries map[string]*cursorEntry
	bytes   int
	users   map[string]int // entries per owner
}

// cursorEntry is one paged reply: the pages after the first, rendered as
// JSON arrays. pages[i] is page i+2; those before next-2 are released.
type cursorEntry struct {
	owner   string
	id      json.RawMessage
	of      string
	pages   [][]byte
	next    int // the page number the entry expects next
	bytes   int
	expires time.Time
}

func newCursorStore(now func() time.Time) *cursorStore {
	if now == nil {
		now = time.Now
	}
	return &cursorStore{now: now, entries: map[string]*cursorEntry{}, users: map[string]int{}}
}

// cursorPage is a page taken from the store.
type cursorPage struct {
	id      json.RawMessage
	of      string
	page    int
	results []byte // a JSON array
	next    string // "" on the last page
}

// put stores the pages after a first page and returns the cursor of the
// second.
func (c *cursorStore) put(owner string, id json.RawMessage, of string, pages [][]byte) string {
	var key [16]byte
	rand.Read(key[:])
	k := hex.EncodeToString(key[:])
	e := &cursorEntry{owner: owner, id: id, of: of, pages: pages, next: 2, expires: c.now().Add(CursorTTL)}
	for _, p := range pages {
		e.bytes += len(p)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep()
	for len(c.entries) > 0 && (len(c.entries)+1 > cursorMaxEntries || c.bytes+e.bytes > cursorMaxBytes || c.users[owner]+1 > cursorPerUser) {
		c.evict(owner, c.users[owner]+1 > cursorPerUser)
	}
	c.entries[k] = e
	c.bytes += e.bytes
	c.users[owner]++
	return k + "." + strconv.Itoa(e.next)
}

// take returns the page cursor names, which owner must have asked for.
// It releases the pages before it: a retry of the same cursor gets the
// same page (the last page too, until the entry expires), an older cursor
// is not_found.
func (c *cursorStore) take(cursor, owner string) (*cursorPage, error) {
	k, n, ok := strings.Cut(cursor, ".")
	page, err := strconv.Atoi(n)
	if !ok || err != nil || len(k) != 32 || page < 2 {
		return nil, errorf(CodeBadRequest, "malformed cursor %q: give the next of a paged reply as it came", cursor)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep()
	e := c.entries[k]
	if e == nil {
		return nil, errorf(CodeNotFound, "cursor unknown or expired (cursors last %v after their last use)", CursorTTL)
	}
	if e.owner != owner {
		return nil, errorf(CodeForbidden, "this cursor belongs to another user")
	}
	if page < e.next-1 || page > e.next || page-2 >= len(e.pages) {
		return nil, errorf(CodeNotFound, "page %d of this cursor is released or does not exist (the next is %d)", page, e.next)
	}
	// Release the pages before this one: the client has them.
	for i := 0; i < page-2; i++ {
		c.bytes -= len(e.pages[i])
		e.bytes -= len(e.pages[i])
		e.pages[i] = nil
	}
	e.next = page + 1
	e.expires = c.now().Add(CursorTTL)
	p := &cursorPage{id: e.id, of: e.of, page: page, results: e.pages[page-2]}
	// The last page stays, alone, until the entry expires, for a retry.
	if page-2 < len(e.pages)-1 {
		p.next = k + "." + strconv.Itoa(page+1)
	}
	return p, nil
}

// sweep drops the expired entries. The store holds few enough entries
// that a scan per call costs less than keeping them ordered.
func (c *cursorStore) sweep() {
	now := c.now()
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			c.drop(k, e)
		}
	}
}

// evict drops the entry closest to expiry, of owner only if mine.
func (c *cursorStore) evict(owner string, mine bool) {
	var victim string
	var ve *cursorEntry
	for k, e := range c.entries {
		if mine && e.owner != owner {
			continue
		}
		if ve == nil || e.expires.Before(ve.expires) {
			victim, ve = k, e
		}
	}
	if ve != nil {
		c.drop(victim, ve)
	}
}

func (c *cursorStore) drop(k string, e *cursorEntry) {
	delete(c.entries, k)
	c.bytes -= e.bytes
	if c.users[e.owner]--; c.users[e.owner] <= 0 {
		delete(c.users, e.owner)
	}
}
