package client

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/seed84792017/cellcast/protocol"
)

// Notifications are most of what a subscriber reads, so they are decoded
// by hand: encoding/json would cost a client more CPU than the broker
// spends rendering them. Anything the fast path does not expect (escapes,
// whitespace, fields in another order) takes encoding/json instead, so
// the fast path only has to be right on what it accepts.

var (
	notePrefix = []byte(protocol.NotePrefix)
	noteSeq    = []byte(protocol.NoteSeq)
	notePrev   = []byte(protocol.NotePrev)
	notePub    = []byte(protocol.NotePublication)
	// replyPrefix starts the broker's replies: a notification has no id.
	replyPrefix = []byte("{" + quoted(protocol.FieldID))
)

// isNotification reports whether a frame is a notification.
func isNotification(b []byte) bool { return hasOp(b, notePrefix, protocol.OpNotification) }

// hasOp reports whether a frame's op is op: it starts with the broker's
// rendering (prefix), or, the slow path, another rendering of the same
// object says so.
func hasOp(b, prefix []byte, op string) bool {
	if bytes.HasPrefix(b, prefix) {
		return true
	}
	if !bytes.Contains(b, []byte(`"`+op+`"`)) {
		return false
	}
	var probe struct {
		Op string `json:"op"`
	}
	return json.Unmarshal(b, &probe) == nil && probe.Op == op
}

// splitNotification returns a notification frame's sid, seq, prev (-1
// when the frame has none: a WebSocket's) and publication object.
func splitNotification(b []byte) (sid []byte, seq, prev int64, pub []byte, err error) {
	if rest, ok := bytes.CutPrefix(b, notePrefix); ok {
		i := bytes.IndexByte(rest, '"')
		if i > 0 && bytes.HasPrefix(rest[i:], noteSeq) {
			sid, rest = rest[:i], rest[i+len(noteSeq):]
			seq, rest, ok = number(rest)
			prev = -1
			if after, found := bytes.CutPrefix(rest, notePrev); ok && found {
				prev, rest, ok = number(after)
			}
			if ok && bytes.HasPrefix(rest, notePub) && bytes.HasSuffix(rest, []byte(protocol.NoteSuffix)) {
				return sid, seq, prev, rest[len(notePub) : len(rest)-1], nil
			}
		}
	}
	var w struct {
		Sid         string          `json:"sid"`
		Seq         int64           `json:"seq"`
		Prev        *int64          `json:"prev"`
		Publication json.RawMessage `json:"publication"`
	}
	if err := json.Unmarshal(b, &w); err != nil || w.Sid == "" || len(w.Publication) == 0 {
		return nil, 0, 0, nil, fmt.Errorf("%w: notification %.100q", ErrProtocol, b)
	}
	prev = -1
	if w.Prev != nil {
		if prev = *w.Prev; prev < 0 {
			return nil, 0, 0, nil, fmt.Errorf("%w: prev %d", ErrProtocol, prev)
		}
	}
	return []byte(w.Sid), w.Seq, prev, w.Publication, nil
}

// number reads the digits at the start of b.
func number(b []byte) (int64, []byte, bool) {
	j, n := 0, int64(0)
	for j < len(b) && j < 18 && b[j] >= '0' && b[j] <= '9' {
		n = n*10 + int64(b[j]-'0')
		j++
	}
	if j == 18 && len(b) > j && b[j] >= '0' && b[j] <= '9' { // 19 digits may overflow
		j++
		var err error
		if n, err = strconv.ParseInt(string(b[:j]), 10, 64); err != nil {
			return 0, b, false
		}
	}
	return n, b[j:], j > 0
}

// decodePublication decodes a publication object; stamps may be nil.
func decodePublication(b []byte, p *Publication, stamps *stampCache) error {
	if decodePublicationFast(b, p, stamps) {
		return nil
	}
	return decodePublicationSlow(b, p)
}

// decodePublicationFast reads a flat object of string fields and a flat
// attrs object of strings, with no whitespace and no escapes; false means
// "not that shape", not "invalid".
func decodePublicationFast(b []byte, p *Publication, stamps *stampCache) bool {
	s := scanner{b: b, stamps: stamps}
	var whole string
	return s.publication(p, &whole) && s.end()
}

// pubKeys are the publication's fields with their quotes and colon, in
// the order the broker renders them: each key is first tried against the
// one after the last, so a key costs one comparison.
var pubKeys = [...]string{
	keyPid: quoted(protocol.FieldPid), keyUid: quoted(protocol.FieldUid), keyCell: quoted(protocol.FieldCell),
	keyTopic: quoted(protocol.FieldTopic), keyTp: quoted(protocol.FieldTp), keyExpires: quoted(protocol.FieldExpiresAt),
	keyDesc: quoted(protocol.FieldDesc), keyAttrs: quoted(protocol.FieldAttrs),
}

// quoted is a field's key as the broker renders it: "name":.
func quoted(field string) string { return `"` + field + `":` }

const (
	keyPid = iota
	keyUid
	keyCell
	keyTopic
	keyTp
	keyExpires
	keyDesc
	keyAttrs
)

// key reads one of pubKeys at the scanner, trying *next first, and
// leaves *next at the one after it; false for any other key (escaped
// ones included: the slow path reads those).
func (s *scanner) key(next *int) (int, bool) {
	rest := s.b[s.i:]
	for k, tries := *next, 0; tries < len(pubKeys); tries++ {
		if k == len(pubKeys) {
			k = 0
		}
		if len(rest) >= len(pubKeys[k]) && string(rest[:len(pubKeys[k])]) == pubKeys[k] {
			s.i += len(pubKeys[k])
			*next = k + 1
			return k, true
		}
		k++
	}
	return 0, false
}

// publication reads one publication object at the scanner (see
// decodePublicationFast). Its strings are slices of *whole, a copy of
// s.b made on first use: one allocation for every string of every
// publication read from the same buffer.
func (s *scanner) publication(p *Publication, whole *string) bool {
	*p = Publication{}
	str := func() (string, bool) {
		i, j, ok := s.str()
		if !ok {
			return "", false
		}
		if *whole == "" {
			*whole = string(s.b)
		}
		return (*whole)[i:j], true
	}
	if !s.take('{') {
		return false
	}
	if s.take('}') {
		return true
	}
	var seen uint
	for next := 0; ; {
		k, ok := s.key(&next)
		if !ok || seen&(1<<k) != 0 { // encoding/json would keep the last, or merge attrs
			return false
		}
		seen |= 1 << k
		switch k {
		case keyAttrs:
			if p.Attrs, ok = s.strMap(str); !ok {
				return false
			}
		case keyTp, keyExpires:
			// Read to the next quote unchecked: a stamp the parser
			// takes is digits and punctuation, with no escape in it.
			j := -1
			if s.take('"') {
				j = bytes.IndexByte(s.b[s.i:], '"')
			}
			if j < 0 {
				return false
			}
			t, ok := s.stamps.parse(s.b[s.i : s.i+j])
			if !ok {
				return false
			}
			if s.i += j + 1; k == keyTp {
				p.Tp = t
			} else {
				p.ExpiresAt = t
			}
		default:
			v, ok := str()
			if !ok {
				return false
			}
			switch k {
			case keyPid:
				p.Pid = v
			case keyUid:
				p.Uid = v
			case keyCell:
				p.Cell = v
			case keyTopic:
				p.Topic = v
			case keyDesc:
				p.Desc = v
			}
		}
		if s.take('}') {
			return true
		}
		if !s.take(',') {
			return false
		}
	}
}

// publications reads an array of publication objects at the scanner.
func (s *scanner) publications() ([]Publication, bool) {
	if !s.take('[') {
		return nil, false
	}
	if s.take(']') {
		return nil, true
	}
	var whole string
	// A capacity from the separators ahead (a hint: one inside a string
	// only costs room): growing by doubling copied every publication
	// about twice over.
	out := make([]Publication, 0, bytes.Count(s.b[s.i:], pubSep)+1)
	for {
		out = append(out, Publication{})
		if !s.publication(&out[len(out)-1], &whole) {
			return nil, false
		}
		if s.take(']') {
			return out, true
		}
		if !s.take(',') {
			return nil, false
		}
	}
}

var pubSep = []byte("},{")

type scanner struct {
	b      []byte
	i      int
	stamps *stampCache // nil: none
}

func (s *scanner) take(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) end() bool { return s.i == len(s.b) }

// str reads a string with no escapes, no control characters and valid
// UTF-8 (encoding/json would replace invalid bytes), and returns where
// its contents lie in b.
func (s *scanner) str() (int, int, bool) {
	if !s.take('"') {
		return 0, 0, false
	}
	start, ascii := s.i, true
	// Eight bytes at a time while none is a quote, a backslash, a
	// control character or non-ASCII; the loop below looks at the rest.
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for s.i+8 <= len(s.b) {
		x := binary.LittleEndian.Uint64(s.b[s.i:])
		q, bs := x^(ones*'"'), x^(ones*'\\')
		if ((q-ones)&^q|(bs-ones)&^bs|(x-ones*0x20)&^x|x)&highs != 0 {
			break
		}
		s.i += 8
	}
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return start, s.i - 1, ascii || utf8.Valid(s.b[start:s.i-1])
		case c == '\\' || c < 0x20:
			return 0, 0, false
		case c >= 0x80:
			ascii = false
		}
		s.i++
	}
	return 0, 0, false
}

// strMap reads a flat object of strings, each read by str.
func (s *scanner) strMap(str func() (string, bool)) (map[string]string, bool) {
	if !s.take('{') {
		return nil, false
	}
	m := map[string]string{}
	if s.take('}') {
		return m, true
	}
	for {
		k, ok := str()
		if !ok || !s.take(':') {
			return nil, false
		}
		v, ok := str()
		if !ok {
			return nil, false
		}
		m[k] = v
		if s.take('}') {
			return m, true
		}
		if !s.take(',') {
			return nil, false
		}
	}
}

// parseTimeString reads the broker's stamps, RFC 3339 in UTC with up to
// nine fractional digits ("2026-11-21T10:32:12.1Z"), without time.Parse's
// generality; other forms take time.Parse.
func parseTimeString(b string) (time.Time, bool) {
	if minute, ok := stampMinute(b); ok {
		if sec, ns, ok := stampSeconds(b); ok {
			return time.Unix(minute+sec, ns).UTC(), true
		}
	}
	t, err := time.Parse(time.RFC3339Nano, b)
	return t, err == nil
}

// stampMinute is the Unix time of the minute a stamp's first 17 bytes
// ("2026-11-21T10:32:") name.
func stampMinute[T ~string | ~[]byte](b T) (int64, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' {
		return 0, false
	}
	y, ok1 := digits(b, 0, 4)
	mo, ok2 := digits(b, 5, 2)
	d, ok3 := digits(b, 8, 2)
	h, ok4 := digits(b, 11, 2)
	mi, ok5 := digits(b, 14, 2)
	if !(ok1 && ok2 && ok3 && ok4 && ok5) || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h >= 24 || mi >= 60 {
		return 0, false
	}
	return daysSinceEpoch(y, mo, d)*86400 + int64(h*3600+mi*60), true
}

// stampSeconds reads what follows a stamp's minute: "SS", up to nine
// fractional digits, and the Z.
func stampSeconds[T ~string | ~[]byte](b T) (sec int64, ns int64, ok bool) {
	if len(b) < 20 || b[len(b)-1] != 'Z' {
		return 0, 0, false
	}
	s, ok := digits(b, 17, 2)
	if !ok || s >= 60 {
		return 0, 0, false
	}
	switch frac := b[19 : len(b)-1]; {
	case len(frac) == 0:
	case frac[0] == '.' && len(frac) >= 2 && len(frac) <= 10:
		n, ok := digits(b, 20, len(frac)-1)
		if !ok {
			return 0, 0, false
		}
		for range 10 - len(frac) {
			n *= 10
		}
		ns = int64(n)
	default:
		return 0, 0, false
	}
	return int64(s), ns, true
}

// digits reads the n decimal digits of b at i.
func digits[T ~string | ~[]byte](b T, i, n int) (int, bool) {
	v := 0
	for k := i; k < i+n; k++ {
		c := b[k]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// stampCache remembers the minutes of recent stamps: the notifications of
// a burst carry stamps from a few minutes, and reading a stamp's date and
// clock again costs more than the rest of its publication. Slots go by
// the minute's last digit, so a publication's tp and an expiry a minute
// later do not push each other out. Only the client's reader uses it.
type stampCache [10]struct {
	prefix string // a stamp's first 17 bytes
	minute int64
}

// parse is parseTimeString, with the minute taken from the cache when
// it holds the stamp's. A nil cache parses every stamp whole.
func (c *stampCache) parse(b []byte) (time.Time, bool) {
	if c == nil || len(b) < 20 || b[15] < '0' || b[15] > '9' {
		return parseTimeString(string(b))
	}
	e := &c[b[15]-'0']
	if e.prefix != string(b[:17]) {
		minute, ok := stampMinute(b)
		if !ok {
			return parseTimeString(string(b))
		}
		e.prefix, e.minute = string(b[:17]), minute
	}
	sec, ns, ok := stampSeconds(b)
	if !ok {
		return parseTimeString(string(b))
	}
	return time.Unix(e.minute+sec, ns).UTC(), true
}

// daysIn is the length of month m of year y.
func daysIn(y, m int) int {
	if m == 2 && y%4 == 0 && (y%100 != 0 || y%400 == 0) {
		return 29
	}
	return int("\x1f\x1c\x1f\x1e\x1f\x1e\x1f\x1f\x1e\x1f\x1e\x1f"[m-1])
}

// daysSinceEpoch counts days from 1970-01-01 to y-m-d in the proleptic
// Gregorian calendar (H. Hinnant's days_from_civil), for y ≥ 0.
func daysSinceEpoch(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	doy := (153*((m+9)%12)+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

func parseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, ok := parseTimeString(s)
	if !ok {
		return t, fmt.Errorf("%w: time %q", ErrProtocol, s)
	}
	return t, nil
}
