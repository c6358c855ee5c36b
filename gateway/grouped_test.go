package gateway

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// wsFrames splits a server's byte stream into its frames' opcodes and
// payloads, checking each head's length.
func wsFrames(t *testing.T, b []byte) (ops []byte, payloads [][]byte) {
	t.Helper()
	for len(b) > 0 {
		if len(b) < 2 || b[0]&0x80 == 0 || b[1]&0x80 != 0 {
			t.Fatalf("not a final unmasked frame: %x", b[:min(len(b), 16)])
		}
		n, h := uint64(b[1]&0x7f), 2
		switch n {
		case 126:
			n, h = uint64(binary.BigEndian.Uint16(b[2:])), 4
		case 127:
			n, h = binary.BigEndian.Uint64(b[2:]), 10
		}
		if uint64(len(b)-h) < n {
			t.Fatalf("frame of %d bytes, %d left", n, len(b)-h)
		}
		ops, payloads = append(ops, b[0]&0x0f), append(payloads, b[h:h+int(n)])
		b = b[h+int(n):]
	}
	return ops, payloads
}

// sent is one frame as the client reads it: a notification (sid, seq and
// its publication's value) or anything else by its bytes.
type sent struct {
	sid   string
	seq   int64
	pub   any
	other string
}

// readBack expands what the client reads into one sent per queued frame,
// and counts the grouped frames and their recipients.
func readBack(t *testing.T, ops []byte, payloads [][]byte) (out []sent, groups, most int) {
	t.Helper()
	for i, p := range payloads {
		var v map[string]any
		switch ops[i] {
		case websocket.BinaryMessage:
			v, _ = cborValue(t, p).(map[string]any)
		case websocket.TextMessage:
			if json.Unmarshal(p, &v) != nil {
				t.Fatalf("not JSON: %.100q", p)
			}
		default:
			out = append(out, sent{other: fmt.Sprint(ops[i], string(p))})
			continue
		}
		seq := func(x any) int64 {
			switch n := x.(type) {
			case float64:
				return int64(n)
			case int64:
				return n
			case uint64:
				return int64(n)
			}
			t.Fatalf("seq %T %v", x, x)
			return 0
		}
		switch v["op"] {
		case "notification":
			if len(v) != 4 {
				t.Fatalf("notification %v", v)
			}
			out = append(out, sent{sid: v["sid"].(string), seq: seq(v["seq"]), pub: v["publication"]})
		case "notifications":
			to, _ := v["to"].([]any)
			if len(v) != 3 || len(to) < 2 {
				t.Fatalf("grouped notification %v", v)
			}
			groups, most = groups+1, max(most, len(to))
			for _, r := range to {
				r := r.(map[string]any)
				if len(r) != 2 {
					t.Fatalf("recipient %v", r)
				}
				out = append(out, sent{sid: r["sid"].(string), seq: seq(r["seq"]), pub: v["publication"]})
			}
		default:
			out = append(out, sent{other: string(p)})
		}
	}
	return out, groups, most
}

// The writer's frames, grouped or not, in JSON or CBOR, read back as the
// frames queued, in order; grouped, consecutive notifications of one
// publication share a frame, and a group's recipients stay within
// maxGroupBytes. The oracle is the queue itself.
func TestGroupedFramesReadBackAsQueued(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	bodies := []string{
		`{"pid":"a-1.2","uid":"u","cell":"1.2","tp":"2026-11-21T10:32:12.1Z","expires_at":"2026-11-21T10:33:12.1Z","desc":"road closed"}`,
		`{"pid":"b-1.3","uid":"v","cell":"1.3","tp":"2026-11-21T10:32:13.1Z","expires_at":"2026-11-21T10:33:13.1Z","desc":"fog","attrs":{"k":"v"}}`,
		// The first's length: only where it lies tells them apart.
		`{"pid":"a-1.2","uid":"u","cell":"1.2","tp":"2026-11-21T10:32:12.1Z","expires_at":"2026-11-21T10:33:12.1Z","desc":"road opened"}`,
		`{"pid":"c-4","uid":"w","cell":"4","tp":"2026-11-21T10:32:14.1Z","expires_at":"2026-11-21T10:33:14.1Z","desc":"` + strings.Repeat("x", 70_000) + `"}`,
	}
	for _, bin := range []bool{false, true} {
		enc := make([][]byte, len(bodies))
		for i, b := range bodies {
			enc[i] = []byte(b)
			if bin {
				var err error
				if enc[i], err = appendCBOR(nil, enc[i]); err != nil {
					t.Fatal(err)
				}
			}
		}
		for round := range 20 {
			var fs []frame
			for len(fs) < 200 {
				switch k := rng.Intn(10); {
				case k == 0:
					reply := []byte(fmt.Sprintf(`{"id":"%d","op":"published"}`, len(fs)))
					if bin {
						reply = mustCBOR(t, reply)
					}
					fs = append(fs, frame{data: reply, bin: bin})
				case k == 1:
					fs = append(fs, frame{op: websocket.PingMessage, data: []byte("p")})
				default: // a run of one publication's notifications
					b := rng.Intn(len(enc))
					for range 1 + rng.Intn(40) {
						sid := fmt.Sprintf("s%d-%s", len(fs), strings.Repeat("z", rng.Intn(30)))
						fs = append(fs, frame{data: enc[b], sid: sid, seq: rng.Int63n(1 << 40), tp: int64(b + 1), bin: bin})
					}
				}
			}
			if round == 0 { // one run far past maxGroupBytes
				for i := range 4000 {
					fs = append(fs, frame{data: enc[0], sid: fmt.Sprintf("long-%d-%s", i, strings.Repeat("q", 40)), seq: int64(i + 1), tp: 1, bin: bin})
				}
			}
			var want []sent
			for _, f := range fs {
				if f.tp == 0 {
					ops, ps := []byte{f.op}, [][]byte{f.data}
					if f.op == 0 {
						ops[0] = websocket.TextMessage
						if bin {
							ops[0] = websocket.BinaryMessage
						}
					}
					w, _, _ := readBack(t, ops, ps)
					want = append(want, w...)
					continue
				}
				var pub any
				json.Unmarshal([]byte(bodies[f.tp-1]), &pub)
				want = append(want, sent{sid: f.sid, seq: f.seq, pub: pub})
			}
			for _, grouped := range []bool{false, true} {
				var out bytes.Buffer
				w := bufio.NewWriterSize(&out, 64<<10)
				if _, err := writeFrames(w, fs, grouped); err != nil {
					t.Fatal(err)
				}
				w.Flush()
				ops, ps := wsFrames(t, out.Bytes())
				got, groups, most := readBack(t, ops, ps)
				if !reflect.DeepEqual(normalize(got), normalize(want)) {
					t.Fatalf("bin %v grouped %v round %d: read back differs from the queue", bin, grouped, round)
				}
				switch {
				case !grouped && groups > 0:
					t.Fatalf("bin %v: %d grouped frames without asking", bin, groups)
				case grouped && groups == 0:
					t.Fatalf("bin %v round %d: nothing grouped", bin, round)
				case most*72 > maxGroupBytes+72*2:
					t.Fatalf("bin %v: a group of %d recipients", bin, most)
				}
			}
		}
	}
}

func mustCBOR(t *testing.T, b []byte) []byte {
	t.Helper()
	out, err := appendCBOR(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// groupedNotifications takes grouped, or nothing, and refuses the rest.
func TestGroupedNotificationsParameter(t *testing.T) {
	for q, want := range map[string]bool{"": false, "?notifications=": false, "?notifications=grouped": true, "?token=x&notifications=grouped": true} {
		got, err := groupedNotifications(httptest.NewRequest("GET", "/ws"+q, nil))
		if err != nil || got != want {
			t.Fatalf("%q: %v %v", q, got, err)
		}
	}
	for _, q := range []string{"?notifications=separate", "?notifications=GROUPED"} {
		if _, err := groupedNotifications(httptest.NewRequest("GET", "/ws"+q, nil)); err == nil || !strings.Contains(err.Error(), "grouped") {
			t.Fatalf("%q: %v", q, err)
		}
	}
}
