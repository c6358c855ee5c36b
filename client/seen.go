package client

import (
	"bytes"
	"maps"
	"strings"
)

// seenPubs remembers the publications a client's reader decoded lately,
// by pid, with the bytes each was decoded from. A client holding many
// subscriptions reads the same publication again and again: in the past
// results of every subscription that finds it, and live. When a
// publication's bytes are the same as before, it is the same value, and
// copying it costs a fraction of reading it again. Only the reader uses
// it.
//
// An entry owns copies of its strings, so it pins no frame. Entries are
// bounded in number and publications over seenMaxRaw bytes are not kept;
// the oldest goes first.
type seenPubs struct {
	m     map[string]*seenPub
	order []string // pids, a ring from next on, oldest first
	next  int
}

type seenPub struct {
	raw string // the publication's JSON object
	p   Publication
}

const (
	seenEntries = 4096
	seenMaxRaw  = 4 << 10
)

var pidPrefix = []byte(`{"pid":"`)

// pidOf returns the pid a publication object starts with, as the broker
// renders it; nil if it does not.
func pidOf(b []byte) []byte {
	rest, ok := bytes.CutPrefix(b, pidPrefix)
	if !ok {
		return nil
	}
	i := bytes.IndexByte(rest, '"')
	if i <= 0 {
		return nil
	}
	return rest[:i]
}

// lookup returns the publication whose object starts b, and the object's
// length, when b starts with the very bytes it was read from. The copy
// has its own attributes and place, so its user may change them.
func (c *seenPubs) lookup(b []byte, p *Publication) (int, bool) {
	if c == nil || c.m == nil {
		return 0, false
	}
	pid := pidOf(b)
	if pid == nil {
		return 0, false
	}
	e := c.m[string(pid)]
	if e == nil || len(b) < len(e.raw) || string(b[:len(e.raw)]) != e.raw {
		return 0, false
	}
	*p = e.p
	p.Attrs = maps.Clone(e.p.Attrs)
	if e.p.At != nil {
		at := *e.p.At
		p.At = &at
	}
	return len(e.raw), true
}

// add remembers p, read from raw, a whole publication object.
func (c *seenPubs) add(raw []byte, p *Publication) {
	if c == nil || len(raw) > seenMaxRaw || p.Pid == "" || string(pidOf(raw)) != p.Pid {
		return
	}
	if c.m == nil {
		c.m = make(map[string]*seenPub, seenEntries)
		c.order = make([]string, 0, seenEntries)
	}
	if _, ok := c.m[p.Pid]; ok {
		return // the same pid with other bytes: keep the first
	}
	e := &seenPub{raw: string(raw), p: *p}
	e.p.Pid, e.p.Uid, e.p.Cell = strings.Clone(p.Pid), strings.Clone(p.Uid), strings.Clone(p.Cell)
	e.p.Topic, e.p.Desc = strings.Clone(p.Topic), strings.Clone(p.Desc)
	if p.Attrs != nil {
		e.p.Attrs = make(map[string]string, len(p.Attrs))
		for k, v := range p.Attrs {
			e.p.Attrs[strings.Clone(k)] = strings.Clone(v)
		}
	}
	if p.At != nil {
		at := *p.At
		e.p.At = &at
	}
	if len(c.order) < seenEntries {
		c.order = append(c.order, e.p.Pid)
	} else {
		delete(c.m, c.order[c.next])
		c.order[c.next] = e.p.Pid
		c.next = (c.next + 1) % seenEntries
	}
	c.m[e.p.Pid] = e
}
