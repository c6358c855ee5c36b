package protocol

import (
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// declared reads the package's source for its string constants, by
// name, and for the names declared in the same block as each.
func declared(t *testing.T) (values map[string]string, block map[string][]string) {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	values, block = map[string]string{}, map[string][]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			var names []string
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: not a string literal; this test reads only those", n.Name)
					}
					if values[n.Name], err = strconv.Unquote(lit.Value); err != nil {
						t.Fatal(err)
					}
					names = append(names, n.Name)
				}
			}
			for _, n := range names {
				block[n] = names
			}
		}
	}
	return values, block
}

// withPrefix returns the values of the constants named prefix….
func withPrefix(values map[string]string, prefix string) []string {
	var out []string
	for n, v := range values {
		if strings.HasPrefix(n, prefix) {
			out = append(out, v)
		}
	}
	return out
}

// sameSet fails unless list holds each of want once, and nothing else.
func sameSet(t *testing.T, what string, list, want []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, v := range list {
		if seen[v] {
			t.Errorf("%s lists %q twice", what, v)
		}
		seen[v] = true
	}
	for _, v := range want {
		if !seen[v] {
			t.Errorf("%s leaves out %q", what, v)
		}
		delete(seen, v)
	}
	for _, v := range slices.Sorted(maps.Keys(seen)) {
		t.Errorf("%s lists %q, which no constant declares", what, v)
	}
}

// TestListsHoldEveryConstant: the gateway's, the client's and the
// cluster's tests walk the lists, so a constant left out of its list
// would escape them.
func TestListsHoldEveryConstant(t *testing.T) {
	values, block := declared(t)
	sameSet(t, "Codes", Codes(), withPrefix(values, "Code"))
	sameSet(t, "EndReasons", EndReasons(), withPrefix(values, "End"))
	sameSet(t, "Limits", Limits(), withPrefix(values, "Limit"))
	for _, l := range [][]string{RequestOps(), ReplyOps()} {
		if len(slices.Compact(slices.Sorted(slices.Values(l)))) != len(l) {
			t.Errorf("%v lists an op twice", l)
		}
	}
	ops := slices.Compact(slices.Sorted(slices.Values(append(RequestOps(), ReplyOps()...))))
	sameSet(t, "RequestOps and ReplyOps", ops, withPrefix(values, "Op"))
	var pubFields []string
	for _, n := range block["FieldPid"] {
		pubFields = append(pubFields, values[n])
	}
	sameSet(t, "PublicationFields", PublicationFields(), pubFields)
	if len(Codes()) == 0 || len(EndReasons()) == 0 || len(RequestOps()) == 0 {
		t.Fatal("the source held no constants: the test read nothing")
	}
}

func TestNotificationFrames(t *testing.T) {
	pub := `{"pid":"p","uid":"u"}`
	note := NotePrefix + "s-1.4" + NoteSeq + "12" + NotePrev + "3" + NotePublication + pub + NoteSuffix
	var n map[string]json.RawMessage
	if err := json.Unmarshal([]byte(note), &n); err != nil {
		t.Fatalf("%s: %v", note, err)
	}
	want := map[string]string{FieldOp: `"` + OpNotification + `"`, FieldSid: `"s-1.4"`, FieldSeq: "12", FieldPrev: "3", FieldPublication: pub}
	if len(n) != len(want) {
		t.Errorf("%s: fields %v, want %v", note, slices.Sorted(maps.Keys(n)), slices.Sorted(maps.Keys(want)))
	}
	for k, v := range want {
		if string(n[k]) != v {
			t.Errorf("%s: %s = %s, want %s", note, k, n[k], v)
		}
	}

	group := GroupPrefix + GroupSid + "a" + NoteSeq + "1}," + GroupSid + "b" + NoteSeq + "2}" + GroupPublication + pub + NoteSuffix
	var g struct {
		Op string `json:"op"`
		To []struct {
			Sid string `json:"sid"`
			Seq int64  `json:"seq"`
		} `json:"to"`
		Publication json.RawMessage `json:"publication"`
	}
	dec := json.NewDecoder(strings.NewReader(group))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		t.Fatalf("%s: %v", group, err)
	}
	if g.Op != OpNotifications || len(g.To) != 2 || g.To[1].Sid != "b" || g.To[1].Seq != 2 || string(g.Publication) != pub {
		t.Errorf("%s read as %+v", group, g)
	}
	for _, tag := range []string{FieldOp, FieldTo, FieldSid, FieldSeq, FieldPublication} {
		if !strings.Contains(group, `"`+tag+`":`) {
			t.Errorf("%s lacks %q", group, tag)
		}
	}
}

// cborText and cborMap are CBOR heads of short text strings and small
// maps (RFC 8949 section 3: major type and length in one byte).
func cborText(s string) string { return string(rune(0x60+len(s))) + s }
func cborMap(n int) string     { return string(rune(0xa0 + n)) }

func TestCBORFrames(t *testing.T) {
	for _, c := range []struct{ name, got, want string }{
		{"CBORNotePrefix", CBORNotePrefix, cborMap(4) + cborText(FieldOp) + cborText(OpNotification) + cborText(FieldSid)},
		{"CBORNoteSeq", CBORNoteSeq, cborText(FieldSeq)},
		{"CBORNotePublication", CBORNotePublication, cborText(FieldPublication)},
		{"CBORGroupPrefix", CBORGroupPrefix, cborMap(3) + cborText(FieldOp) + cborText(OpNotifications) + cborText(FieldTo)},
		{"CBORGroupSid", CBORGroupSid, cborMap(2) + cborText(FieldSid)},
	} {
		if want := latin1(c.want); c.got != want {
			t.Errorf("%s = %q, want %q", c.name, c.got, want)
		}
	}
}

// latin1 turns the runes of s, all below 256, into bytes: string(rune(x))
// is UTF-8, and a CBOR head is one byte.
func latin1(s string) string {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		b = append(b, byte(r))
	}
	return string(b)
}

func TestErrorIs(t *testing.T) {
	e := &Error{Code: CodeOverloaded, Message: "slow down", RetryAfter: time.Second, Limit: LimitUserRate}
	if !errors.Is(e, &Error{Code: CodeOverloaded}) {
		t.Error("an overloaded reply is not its code's sentinel")
	}
	if errors.Is(e, &Error{Code: CodeTooMany}) || errors.Is(e, &Error{Code: CodeOverloaded, Message: "other"}) {
		t.Error("an overloaded reply matches another code, or an error with a message")
	}
	if got, want := e.Error(), "cellcast: overloaded: slow down"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestRetryAfterRoundsUp(t *testing.T) {
	for _, c := range []struct {
		d  time.Duration
		ms int64
	}{{0, 0}, {time.Nanosecond, 1}, {time.Millisecond, 1}, {1500 * time.Millisecond, 1500}, {1500*time.Millisecond + 1, 1501}} {
		e := &Error{RetryAfter: c.d}
		if got := e.RetryAfterMs(); got != c.ms {
			t.Errorf("RetryAfterMs of %v = %d, want %d", c.d, got, c.ms)
		}
		if back := RetryAfterOf(c.ms); back < c.d || back-c.d >= time.Millisecond {
			t.Errorf("RetryAfterOf(%d) = %v: not %v rounded up", c.ms, back, c.d)
		}
	}
}

func TestSubjects(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{InboxPrefix(""), "_INBOX"},
		{InboxPrefix("alice"), "_INBOX.alice"},
		{NotifySubject("alice"), "cellcast.notify.alice"},
		{RequestSubject(OpResume), "cellcast.resume"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}
