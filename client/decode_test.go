package client

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	for _, s := range []string{"2026-11-21T10:32:12Z", "2026-11-21T10:32:12.1Z", "2026-11-21T10:32:12.123456789Z", "2026-11-21T10:32:12+02:00", "2024-02-29T00:00:00Z"} {
		want, err := time.Parse(time.RFC3339Nano, s)
		got, ok := parseTimeString(s)
		if err != nil || !ok || !got.Equal(want) {
			t.Errorf("%s: got %v %v, want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"", "2026-04-31T00:00:00Z", "2026-11-21T10:32:12.Z", "2026-13-01T00:00:00Z"} {
		if got, ok := parseTimeString(s); ok {
			t.Errorf("%q: accepted as %v", s, got)
		}
	}
}

// TestStampCache: stamps read through the cache, in an order that
// revisits minutes, reuses their slots and brings near misses (another
// day, hour or year with the same minute digit), equal time.Parse's.
func TestStampCache(t *testing.T) {
	var c stampCache
	rng := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 11, 21, 10, 32, 0, 0, time.UTC)
	layouts := []string{"2006-01-02T15:04:05Z", "2006-01-02T15:04:05.000Z", "2006-01-02T15:04:05.999999999Z", "2006-01-02T15:04:05.1Z"}
	for i := range 20000 {
		at := base.Add(time.Duration(rng.IntN(600)) * time.Second).Add(time.Duration(rng.IntN(1e9)))
		switch i % 7 {
		case 0:
			at = at.AddDate(0, 0, rng.IntN(3)) // another day, same clock
		case 1:
			at = at.Add(time.Duration(rng.IntN(3)) * time.Hour)
		case 2:
			at = at.AddDate(rng.IntN(3), 0, 0)
		}
		s := at.Format(layouts[rng.IntN(len(layouts))])
		want, err := time.Parse(time.RFC3339Nano, s)
		got, ok := c.parse([]byte(s))
		if err != nil || !ok || !got.Equal(want) || got.Location() != want.Location() {
			t.Fatalf("%s: got %v %v, time.Parse %v %v", s, got, ok, want, err)
		}
	}
	// A cached minute with a bad tail, and forms the cache never takes.
	for _, s := range []string{"2026-11-21T10:32:60Z", "2026-11-21T10:32:1xZ", "2026-11-21T10:32:12.Z", "2026-11-21T10:32:12+02:00", "2026-11-21T10:3x:12Z", "short"} {
		want, err := time.Parse(time.RFC3339Nano, s)
		got, ok := c.parse([]byte(s))
		if ok != (err == nil) || ok && !got.Equal(want) {
			t.Errorf("%q: got %v %v, time.Parse %v %v", s, got, ok, want, err)
		}
	}
}

// FuzzStampCache: two stamps, read through one cache in turns, are read
// as time.Parse reads them.
func FuzzStampCache(f *testing.F) {
	f.Add("2026-11-21T10:32:12.1Z", "2026-11-21T10:32:13Z")
	f.Add("2026-11-21T10:32:12.1Z", "2026-11-22T10:32:13Z")
	f.Add("2026-11-21T10:32:12Z", "2026-11-21T10:32:12+01:00")
	f.Fuzz(func(t *testing.T, a, b string) {
		var c stampCache
		for _, s := range []string{a, b, a, b} {
			got, ok := c.parse([]byte(s))
			want, err := time.Parse(time.RFC3339Nano, s)
			if ok != (err == nil) || ok && !reflect.DeepEqual(got, want) {
				t.Fatalf("%q: got %v %v, time.Parse %v %v", s, got, ok, want, err)
			}
		}
	})
}

// TestNumber: the seq reader against strconv, at the edges of int64.
func TestNumber(t *testing.T) {
	for _, s := range []string{"0", "7,", "123456789012345678", "1234567890123456789", "9223372036854775807}", "9223372036854775808", "99999999999999999999", "", "x", "-1"} {
		got, rest, ok := number([]byte(s))
		j := 0
		for j < len(s) && j < 19 && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		want, err := strconv.ParseInt(s[:j], 10, 64)
		if ok != (err == nil) || ok && (got != want || string(rest) != s[j:]) {
			t.Errorf("%q: got %d %q %v, strconv %d %v", s, got, rest, ok, want, err)
		}
	}
}

// FuzzTime: the hand-written stamp reader agrees with time.Parse.
func FuzzTime(f *testing.F) {
	for _, s := range []string{"2026-11-21T10:32:12.1Z", "2024-02-29T23:59:59.999999999Z", "2023-02-29T00:00:00Z", "0000-01-01T00:00:00Z", "1969-12-31T23:59:59Z", "9999-12-31T23:59:59Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := parseTimeString(s)
		want, err := time.Parse(time.RFC3339Nano, s)
		if ok != (err == nil) || ok && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: got %v %v, time.Parse %v %v", s, got, ok, want, err)
		}
	})
}

// fuzzStamps carries minutes from one input to the next, so cached
// minutes meet stamps they must not be taken for.
var fuzzStamps stampCache

// FuzzPublication: whatever the fast decoder accepts, encoding/json
// reads the same.
func FuzzPublication(f *testing.F) {
	f.Add([]byte(`{"pid":"p","uid":"u","cell":"1.2","tp":"2026-11-21T10:32:12.1Z","expires_at":"2026-11-21T10:33:12Z","desc":"d","attrs":{"a":"b"}}`))
	f.Add([]byte(`{"pid":"p","topic":"sports/soccer","attrs":{}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var fast, slow Publication
		if !decodePublicationFast(b, &fast, &fuzzStamps) {
			return
		}
		if err := decodePublicationSlow(b, &slow); err != nil {
			t.Fatalf("fast accepted what json refuses: %v", err)
		}
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast %+v, json %+v", fast, slow)
		}
	})
}

// FuzzNotification: the frame splitter never panics, and its fast path
// agrees with encoding/json.
func FuzzNotification(f *testing.F) {
	f.Add([]byte(`{"op":"notification","sid":"s-1","seq":12,"publication":{"pid":"p"}}`))
	f.Add([]byte(`{"op":"notification","sid":"","seq":-1,"publication":{}}`))
	f.Add([]byte(`{"op":"notification","sid":"s-1","seq":12,"prev":7,"publication":{"pid":"p"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sid, seq, prev, pub, err := splitNotification(b)
		if err != nil {
			return
		}
		if len(sid) == 0 || len(pub) == 0 || prev < -1 {
			t.Fatalf("accepted %q with sid %q, prev %d, publication %q", b, sid, prev, pub)
		}
		_ = seq
	})
}

// BenchmarkDecodeNotification: the client's CPU for one notification
// frame, split and decoded into a Notification.
func BenchmarkDecodeNotification(b *testing.B) {
	frame := []byte(`{"op":"notification","sid":"dn0tjgthw7yv-1.4.2","seq":123456789,"publication":{"pid":"dn0tjh1k2x3q-1.4.2.1.3","uid":"reporter","cell":"1.4.2.1.3","tp":"2026-11-21T10:32:12.123456789Z","expires_at":"2026-11-21T10:33:12.123456789Z","desc":"road closed at the corner","attrs":{"category":"traffic","severity":"2"}}}`)
	var stamps stampCache // as the client's reader has
	b.ReportAllocs()
	for b.Loop() {
		_, seq, _, pub, err := splitNotification(frame)
		var n Notification
		if err != nil || decodePublication(pub, &n.Publication, &stamps) != nil || seq == 0 {
			b.Fatal("bad frame")
		}
	}
}

// BenchmarkDecodeNotificationJSON: the same with encoding/json, for
// comparison.
func BenchmarkDecodeNotificationJSON(b *testing.B) {
	frame := []byte(`{"op":"notification","sid":"dn0tjgthw7yv-1.4.2","seq":123456789,"publication":{"pid":"dn0tjh1k2x3q-1.4.2.1.3","uid":"reporter","cell":"1.4.2.1.3","tp":"2026-11-21T10:32:12.123456789Z","expires_at":"2026-11-21T10:33:12.123456789Z","desc":"road closed at the corner","attrs":{"category":"traffic","severity":"2"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		var w struct {
			Sid         string          `json:"sid"`
			Seq         int64           `json:"seq"`
			Publication wirePublication `json:"publication"`
		}
		if err := json.Unmarshal(frame, &w); err != nil {
			b.Fatal(err)
		}
		if _, err := parseTime(w.Publication.Tp); err != nil {
			b.Fatal(err)
		}
		if _, err := parseTime(w.Publication.ExpiresAt); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzReply: whatever the hand-read reply path accepts, encoding/json
// reads the same.
func FuzzReply(f *testing.F) {
	f.Add([]byte(`{"id":"7","op":"subscribed","sid":"s-1","cell":"1","ts":"2026-11-21T10:32:11Z","expires_at":"2026-11-21T10:33:11Z","live":true,"results":[{"pid":"p","tp":"2026-11-21T10:32:12Z"},{"pid":"q","attrs":{"a":"b"}}]}`))
	f.Add([]byte(`{"id":"8","op":"published","pid":"p","matched":2,"recent":[]}`))
	f.Add([]byte(`{"id":"9","op":"page","of":"results","page":2,"more":false,"results":[{"pid":"p"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, ok := decodeReplyFast(b, nil)
		if !ok {
			return
		}
		slow := &wireReply{}
		if err := json.Unmarshal(b, slow); err != nil {
			t.Fatalf("fast accepted what json refuses: %v", err)
		}
		list := slow.Results
		if slow.Op == "published" && fast.pubs != nil && slow.Recent != nil {
			list = slow.Recent
		}
		if len(slow.Recent) > 0 {
			list = slow.Recent
		}
		pubs, err := publications(list)
		if err != nil {
			t.Fatalf("fast read a list json cannot: %v", err)
		}
		slow.Results, slow.Recent, slow.pubs = nil, nil, pubs
		if !reflect.DeepEqual(fast, slow) {
			t.Fatalf("fast %+v\njson %+v", fast, slow)
		}
	})
}

// BenchmarkReply: a subscribed reply with 100 past results.
func BenchmarkReply(b *testing.B) {
	var data []byte
	data = append(data, `{"id":"17","op":"subscribed","sid":"dn0tjgthw7yv-1.4.2","cell":"1.4.2","ts":"2026-11-21T10:32:11.789448535Z","expires_at":"2026-11-21T10:33:11.789448535Z","live":true,"results":[`...)
	for i := range 100 {
		if i > 0 {
			data = append(data, ',')
		}
		data = fmt.Appendf(data, `{"pid":"dn0tjh1k2x%02d-1.4.2.1.3","uid":"reporter","cell":"1.4.2.1.3","tp":"2026-11-21T10:32:12.123456789Z","expires_at":"2026-11-21T10:33:12.123456789Z","desc":"incident"}`, i)
	}
	data = append(data, "]}"...)
	var stamps stampCache // as the client's reader has
	b.ReportAllocs()
	for b.Loop() {
		rep, err := decodeReply(data, &stamps)
		if err != nil || len(rep.pubs) != 100 {
			b.Fatal(err)
		}
	}
}
