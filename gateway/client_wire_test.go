package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/seed84792017/cellcast/client"
	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/protocol"
)

// The gateway's renderings read by the Go client: every code of
// protocol.Codes in an error reply, every reason of protocol.EndReasons in
// an ended frame, over JSON and CBOR. A code or a reason added to the
// protocol fails these tests until the client handles it.

// scripted is a WebSocket peer that renders frames as the gateway does and
// hands the test each request the client sends.
type scripted struct {
	t    *testing.T
	bin  bool
	ws   *websocket.Conn
	reqs chan map[string]any
}

func dialScripted(t *testing.T, enc client.Encoding) (*client.Client, *scripted) {
	t.Helper()
	peer := &scripted{t: t, bin: enc == client.EncodingCBOR, reqs: make(chan map[string]any, 16)}
	ready := make(chan struct{})
	up := websocket.Upgrader{Subprotocols: []string{protocol.SubprotocolJSON, protocol.SubprotocolCBOR}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		peer.ws = ws
		close(ready)
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				close(peer.reqs)
				return
			}
			if peer.bin {
				var e *Error
				if data, _, e = requestJSON(data); e != nil {
					t.Errorf("the client sent CBOR the gateway cannot read: %v", e)
					continue
				}
			}
			var req map[string]any
			if err := json.Unmarshal(data, &req); err != nil {
				t.Errorf("the client sent %q: %v", data, err)
				continue
			}
			peer.reqs <- req
		}
	}))
	t.Cleanup(srv.Close)
	cl, err := client.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), client.Options{UID: "u", Encoding: enc,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	<-ready
	return cl, peer
}

// next is the client's next request, which must be of op.
func (p *scripted) next(op string) (map[string]any, json.RawMessage) {
	p.t.Helper()
	select {
	case req := <-p.reqs:
		if req[protocol.FieldOp] != op {
			p.t.Fatalf("the client sent %v, want a %s", req, op)
		}
		id, _ := json.Marshal(req[protocol.FieldID])
		return req, id
	case <-time.After(10 * time.Second):
		p.t.Fatalf("no %s from the client", op)
		return nil, nil
	}
}

// send writes a frame the way a wsConn does: JSON as is, or transcoded
// to CBOR.
func (p *scripted) send(jsonFrame []byte) {
	p.t.Helper()
	f := (&wsConn{bin: p.bin}).dataFrame(jsonFrame)
	p.write(f.data)
}

func (p *scripted) write(data []byte) {
	p.t.Helper()
	kind := websocket.TextMessage
	if p.bin {
		kind = websocket.BinaryMessage
	}
	if err := p.ws.WriteMessage(kind, data); err != nil {
		p.t.Fatal(err)
	}
}

// notify sends a notification rendered as the gateway renders it.
func (p *scripted) notify(sid string, seq int64) {
	p.t.Helper()
	pub := encode(pubJSON{Pid: "p", Uid: "v", Cell: "1", Tp: FormatTime(time.Now().UnixNano()), ExpiresAt: FormatTime(time.Now().Add(time.Hour).UnixNano())})
	if !p.bin {
		p.write(appendNotification(nil, sid, seq, pub))
		return
	}
	body, err := appendCBOR(nil, pub)
	if err != nil {
		p.t.Fatal(err)
	}
	p.write(appendNotificationCBOR(nil, sid, seq, body))
}

var encodings = map[string]client.Encoding{"json": client.EncodingJSON, "cbor": client.EncodingCBOR}

func TestClientReadsEveryCode(t *testing.T) {
	sentinels := map[string]error{
		protocol.CodeBadRequest:   client.ErrBadRequest,
		protocol.CodeUnauthorized: client.ErrUnauthorized,
		protocol.CodeForbidden:    client.ErrForbidden,
		protocol.CodeNotFound:     client.ErrNotFound,
		protocol.CodeOverloaded:   client.ErrOverloaded,
		protocol.CodeTooLarge:     client.ErrTooLarge,
		protocol.CodeTooMany:      client.ErrTooMany,
		protocol.CodeUnavailable:  client.ErrUnavailable,
		protocol.CodeInternal:     client.ErrInternal,
		protocol.CodeUnknownOp:    client.ErrUnknownOp,
	}
	for name, enc := range encodings {
		t.Run(name, func(t *testing.T) {
			cl, peer := dialScripted(t, enc)
			for _, code := range protocol.Codes() {
				sentinel := sentinels[code]
				if sentinel == nil {
					t.Errorf("the client has no sentinel for %q", code)
				}
				done := make(chan error, 1)
				go func() {
					_, err := cl.Publish(context.Background(), client.PublishRequest{Location: client.Cell("1"), Expires: time.Minute})
					done <- err
				}()
				_, id := peer.next(protocol.OpPublish)
				sent := &Error{Code: code, Message: "because of " + code, RetryAfter: 1500*time.Millisecond + 1, Limit: protocol.LimitUserRate}
				peer.send(errorFrame(id, sent))
				err := <-done
				var got *client.Error
				if !errors.As(err, &got) {
					t.Fatalf("%s: the client returned %v", code, err)
				}
				if got.Code != code || got.Message != sent.Message || got.RetryAfter != 1501*time.Millisecond || got.Limit != sent.Limit {
					t.Errorf("%s: the client read %+v of %+v", code, got, sent)
				}
				for c, s := range sentinels {
					if errors.Is(err, s) != (c == code) {
						t.Errorf("%s: errors.Is(err, the sentinel of %s) = %v", code, c, c != code)
					}
				}
			}
		})
	}
}

func TestClientReadsEveryEndReason(t *testing.T) {
	// What a subscription that ends so comes to: an end (Err), or nil
	// for a resume from the last seq received, as the reason asks.
	outcomes := map[string]error{
		protocol.EndWindow:    client.ErrWindowOver,
		protocol.EndCancelled: client.ErrCancelled,
		protocol.EndMoved:     client.ErrMoved,
		protocol.EndBehind:    nil,
	}
	for name, enc := range encodings {
		t.Run(name, func(t *testing.T) {
			cl, peer := dialScripted(t, enc)
			for _, reason := range protocol.EndReasons() {
				want, known := outcomes[reason]
				if !known {
					t.Errorf("what does the client do with a subscription ended %q?", reason)
					continue
				}
				sid := "s-" + reason
				subs := make(chan *client.Subscription, 1)
				go func() {
					s, err := cl.Subscribe(context.Background(), client.SubscribeRequest{Location: client.Cell("1"), Future: time.Hour})
					if err != nil {
						t.Errorf("%s: %v", reason, err)
					}
					subs <- s
				}()
				_, id := peer.next(protocol.OpSubscribe)
				now := time.Now()
				peer.send(withArray(encode(subscribedReply{ID: id, Op: protocol.OpSubscribed, Sid: sid, Cell: "1",
					Ts: FormatTime(now.UnixNano()), ExpiresAt: FormatTime(now.Add(time.Hour).UnixNano()), Live: true}), protocol.FieldResults, nil))
				s := <-subs
				if s == nil {
					t.FailNow()
				}
				peer.notify(sid, 7)
				if n := <-s.C; n.Seq != 7 {
					t.Fatalf("%s: notification %+v", reason, n)
				}
				peer.send(endedFrame(delivery.End{Sid: sid, Why: delivery.EndReason(reason), Last: 7}))
				if want == nil {
					req, id := peer.next(protocol.OpResume)
					if req[protocol.FieldSid] != sid || req["after"] != 7.0 {
						t.Errorf("%s: the client resumed with %v, want %s after 7", reason, req, sid)
					}
					zero := 0
					peer.send(encode(simpleReply{ID: id, Op: protocol.OpResumed, Sid: sid, Replayed: &zero}))
					peer.send(endedFrame(delivery.End{Sid: sid, Why: delivery.EndWindow, Last: 7}))
					want = client.ErrWindowOver
				}
				select {
				case n, ok := <-s.C:
					if ok {
						t.Fatalf("%s: notification %+v after the end", reason, n)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("%s: the subscription did not end", reason)
				}
				if err := s.Err(); !errors.Is(err, want) {
					t.Errorf("%s: the subscription ended with %v, want %v", reason, err, want)
				}
			}
		})
	}
}
