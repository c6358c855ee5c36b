package subscriptions

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
)

// Namespace separates hierarchies that share Dewey numbers: geo cells and
// raw cell ids live in NSCell, topic ids in NSTopic.
type Namespace byte

const (
	NSCell  Namespace = 'c'
	NSTopic Namespace = 't'
)

func (n Namespace) valid() bool { return n == NSCell || n == NSTopic }

// Cell is a namespaced Dewey id: where a record lives.
type Cell struct {
	NS Namespace
	ID dewey.ID
}

func (c Cell) String() string {
	if c.NS == NSTopic {
		return "t" + c.ID.String()
	}
	return c.ID.String()
}

// ParseCell reads the String form: "1.4.2" or "t3.1".
func ParseCell(s string) (Cell, error) {
	ns := NSCell
	if strings.HasPrefix(s, "t") {
		ns, s = NSTopic, s[1:]
	}
	id, err := dewey.Parse(s)
	if err != nil {
		return Cell{}, err
	}
	return Cell{NS: ns, ID: id}, nil
}

// Overlaps is the hierarchy part of the matching rule: same namespace, and
// one cell is an ancestor-or-self of the other.
func (c Cell) Overlaps(o Cell) bool { return c.NS == o.NS && dewey.Overlaps(c.ID, o.ID) }

// Filter narrows a subscription. The zero Filter accepts everything.
type Filter struct {
	// Keyword, when set, must occur in the description (case-insensitive).
	Keyword string
	// Attrs, when set, must all be present in the publication with equal
	// values.
	Attrs map[string]string
}

// Empty reports whether the filter accepts everything.
func (f Filter) Empty() bool { return f.Keyword == "" && len(f.Attrs) == 0 }

// Accepts reports whether a publication passes the filter.
func (f Filter) Accepts(p *Publication) bool {
	if f.Keyword != "" && !strings.Contains(strings.ToLower(p.Desc), strings.ToLower(f.Keyword)) {
		return false
	}
	for k, v := range f.Attrs {
		if pv, ok := p.Attrs[k]; !ok || pv != v {
			return false
		}
	}
	return true
}

// Subscription is a continuous query over [Tmin, Tmax] on a cell.
type Subscription struct {
	Uid  string
	Cell Cell // its cell, or its cover's first: the one its id names
	// Cover, when it has more than one cell, lists all of them (cover.go);
	// nil otherwise.
	Cover *Cover
	// Shape, when the subscription was made at a point, a circle or a
	// polygon, is where it truly is: its cells only index it (geometry.go).
	Shape    *geo.Shape
	Ts       int64 // when it was made; names it
	Tmin     int64
	Tmax     int64
	SelfJoin bool
	Filter   Filter
}

// Sid is the subscription's id.
func (s *Subscription) Sid() string { return FormatID(s.Ts, s.Cell) }

// Publication is an incident at a cell, valid until Tmax.
type Publication struct {
	Uid   string
	Cell  Cell   // its cell, or its cover's first: the one its id names
	Cover *Cover // all its cells, when more than one; else nil
	Tp    int64  // when it was published; names it
	Tmax  int64  // expiry
	Desc  string
	Attrs map[string]string
	// Shape is where it happened, when it was published at a point, a
	// circle or a polygon; nil for a cell or a topic.
	Shape *geo.Shape
}

// Pid is the publication's id.
func (p *Publication) Pid() string { return FormatID(p.Tp, p.Cell) }

// ErrBadID is matched by errors about malformed sids and pids; it wraps
// ErrBadRequest.
var ErrBadID = fmt.Errorf("%w: malformed id", ErrBadRequest)

// FormatID names the record stamped t at cell c: "<t in base 36>-<cell>".
func FormatID(t int64, c Cell) string {
	return strconv.FormatInt(t, 36) + "-" + c.String()
}

// ParseID splits an id made by FormatID.
func ParseID(s string) (int64, Cell, error) {
	i := strings.IndexByte(s, '-')
	if i <= 0 {
		return 0, Cell{}, fmt.Errorf("%w: %q", ErrBadID, s)
	}
	t, err := strconv.ParseInt(s[:i], 36, 64)
	if err != nil || t <= 0 {
		return 0, Cell{}, fmt.Errorf("%w: %q", ErrBadID, s)
	}
	c, err := ParseCell(s[i+1:])
	if err != nil {
		return 0, Cell{}, fmt.Errorf("%w: %q: %w", ErrBadID, s, err)
	}
	return t, c, nil
}
