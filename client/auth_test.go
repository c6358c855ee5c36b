package client_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/broker"
	"github.com/seed84792017/cellcast/client"
)

// TestTokens: a token names the user over WebSocket and NATS; a wrong one
// is refused at the dial with ErrUnauthorized.
func TestTokens(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("alice-token-0123456789 alice\nbob-token-0123456789 bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startWith(t, broker.Config{DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", TokensFile: tokens})
	defer b.Shutdown(context.Background())
	url := "ws://" + b.HTTPAddr() + "/ws"
	ctx := ctxT(t)
	if _, err := client.Dial(ctx, url, client.Options{Token: "wrong-token-0123456789"}); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("a wrong token: %v", err)
	}
	alice, err := client.Dial(ctx, url, client.Options{Token: "alice-token-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	bob, err := client.DialNATS(ctx, b.NATSURL(), client.Options{Token: "bob-token-0123456789", UID: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	sub, err := bob.Subscribe(ctx, client.SubscribeRequest{Location: client.Cell("4"), Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	p, err := alice.Publish(ctx, client.PublishRequest{Location: client.Cell("4.1"), Expires: time.Minute, Desc: "hi bob"})
	if err != nil {
		t.Fatal(err)
	}
	n := <-sub.C
	if n.Publication.Pid != p.Pid || n.Publication.Uid != "alice" {
		t.Fatalf("bob heard %+v", n.Publication)
	}
	// Acting as someone else is forbidden.
	if _, err := alice.Publish(ctx, client.PublishRequest{UID: "bob", Location: client.Cell("4"), Desc: "as bob"}); !errors.Is(err, client.ErrForbidden) {
		t.Fatalf("alice acting as bob: %v", err)
	}
}
