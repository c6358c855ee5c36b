package client_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/auth"
	"github.com/seed84792017/cellcast/broker"
	"github.com/seed84792017/cellcast/client"
)

// TestNegativeDurationsAreRefused: a negative window or lifetime is
// refused before it is sent, not turned into "none" (a publication that
// reaches live subscribers and is never stored); 0 is none.
func TestNegativeDurationsAreRefused(t *testing.T) {
	_, url := running(t)
	ctx := ctxT(t)
	c := dialT(t, url, "alice")
	sub, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("1.4"), Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]client.SubscribeRequest{
		"past":   {Location: client.Cell("1.4"), Past: -time.Minute, Future: time.Minute},
		"future": {Location: client.Cell("1.4"), Future: -5 * time.Minute},
	} {
		if _, err := c.Subscribe(ctx, r); !errors.Is(err, client.ErrInvalidRequest) || !strings.Contains(err.Error(), name+" -") {
			t.Errorf("subscribe with a negative %s: %v", name, err)
		}
	}
	_, err = c.Publish(ctx, client.PublishRequest{Location: client.Cell("1.4"), Expires: -time.Minute, Desc: "negative"})
	if !errors.Is(err, client.ErrInvalidRequest) || errors.Is(err, client.ErrBadRequest) {
		t.Fatalf("publish with a negative expiry: %v", err)
	}
	// Expires 0: the live subscription hears of it, and it is not stored.
	p, err := c.Publish(ctx, client.PublishRequest{Location: client.Cell("1.4"), Desc: "zero", Attrs: map[string]string{"category": "zero"}})
	if err != nil {
		t.Fatal(err)
	}
	if !p.ExpiresAt.Equal(p.Tp) || p.Matched != 1 {
		t.Fatalf("published %+v, want it to expire at once and match the subscription", p)
	}
	if n := <-sub.C; n.Publication.Desc != "zero" {
		t.Fatalf("first notification %q: the negative one went out", n.Publication.Desc)
	}
	res, err := c.Query(ctx, client.QueryRequest{Attr: "uid", Eq: "alice"})
	if err != nil || res.Count != 0 {
		t.Fatalf("stored: %+v, %v", res, err)
	}
}

func TestHalfRangeIsRefused(t *testing.T) {
	_, url := running(t)
	c := dialT(t, url, "alice")
	for _, r := range []client.QueryRequest{{Attr: "tp", From: "2026-01-01T00:00:00Z"}, {Attr: "tp", To: "2026-01-01T00:00:00Z"}} {
		if _, err := c.Query(ctxT(t), r); !errors.Is(err, client.ErrInvalidRequest) || !strings.Contains(err.Error(), "both From and To") {
			t.Errorf("%+v: %v", r, err)
		}
	}
}

// hmacBroker runs a broker under HMAC auth and returns it with a token
// for alice.
func hmacBroker(t *testing.T) (*broker.Broker, string) {
	t.Helper()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("s", 40)), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startWith(t, broker.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", HMACSecretFile: secret})
	t.Cleanup(func() { b.Shutdown(context.Background()) })
	h, err := auth.LoadHMAC(secret)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := h.Sign("alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return b, tok
}

// TestNATSTokenInURLNamesTheUser: nats://TOKEN@HOST works alone, the
// token's "sub" claim being the uid; a uid that is not the token's is
// refused before the dial.
func TestNATSTokenInURLNamesTheUser(t *testing.T) {
	b, tok := hmacBroker(t)
	ctx := ctxT(t)
	url := strings.Replace(b.NATSURL(), "nats://", "nats://"+tok+"@", 1)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := client.DialNATS(ctx, url, client.Options{Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sub, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("3"), Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, client.PublishRequest{Location: client.Cell("3.1"), Expires: time.Minute, Desc: "from the url"}); err != nil {
		t.Fatal(err)
	}
	if n := <-sub.C; n.Publication.Uid != "alice" {
		t.Fatalf("published as %q", n.Publication.Uid)
	}
	// The token as a flag, not in the URL, names the user as well.
	c2, err := client.DialNATS(ctx, b.NATSURL(), client.Options{Token: tok, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	c2.Close()
	if _, err := client.DialNATS(ctx, url, client.Options{UID: "bob", Log: quiet}); !errors.Is(err, client.ErrInvalidRequest) || !strings.Contains(err.Error(), `uid "bob" is not the token's, "alice"`) {
		t.Fatalf("bob with alice's token: %v", err)
	}
	if _, err := client.DialNATS(ctx, b.NATSURL(), client.Options{Token: "not-a-jwt-0123456789", Log: quiet}); !errors.Is(err, client.ErrInvalidRequest) {
		t.Fatalf("a token that names nobody, without a uid: %v", err)
	}
	if _, err := client.DialNATS(ctx, b.NATSURL(), client.Options{Log: quiet}); !errors.Is(err, client.ErrInvalidRequest) {
		t.Fatalf("no uid, no token: %v", err)
	}
}

// TestRefusedUpgradeIsOneError: a 401 at the WebSocket upgrade is the
// broker's error, not its JSON.
func TestRefusedUpgradeIsOneError(t *testing.T) {
	b, _ := hmacBroker(t)
	_, err := client.Dial(ctxT(t), "ws://"+b.HTTPAddr()+"/ws", client.Options{Token: "bad"})
	var e *client.Error
	if !errors.As(err, &e) || e.Code != "unauthorized" || e.Message == "" || strings.Contains(e.Message, "{") {
		t.Fatalf("refused: %#v", err)
	}
}

// TestOnResume: after a drop the hook hears each subscription resumed
// from the last sequence number received.
func TestOnResume(t *testing.T) {
	_, url := running(t)
	ctx := ctxT(t)
	type resumed struct {
		sid   string
		after int64
	}
	got := make(chan resumed, 4)
	c, err := client.Dial(ctx, url, client.Options{UID: "alice", MinBackoff: 10 * time.Millisecond,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), OnResume: func(sid string, after int64) { got <- resumed{sid, after} }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("6"), Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, client.PublishRequest{Location: client.Cell("6.1"), Expires: time.Minute}); err != nil {
		t.Fatal(err)
	}
	n := <-s.C
	c.ForceReconnect()
	select {
	case r := <-got:
		if r.sid != s.Sid || r.after != n.Seq {
			t.Fatalf("resumed %+v, want %s after %d", r, s.Sid, n.Seq)
		}
	case <-ctx.Done():
		t.Fatal("no resume heard")
	}
}
