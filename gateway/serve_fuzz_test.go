package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/auth"
	"github.com/seed84792017/cellcast/dualdb"
	"github.com/seed84792017/cellcast/listdb"
	"github.com/seed84792017/cellcast/service"
)

// FuzzServe drives whole requests through the HTTP and NATS paths of a
// gateway over a real store: any op, subject tail, body and token. No
// input may panic, and HTTP always answers JSON.
func FuzzServe(f *testing.F) {
	for _, s := range []struct{ op, where, body, tok string }{
		{"publish", "", `{"uid":"u","cell":"1.4","expires":"1m"}`, ""},
		{"subscribe", "", `{"cell":"1.4","past":"1m","future":"1m","token":"fuzz-token-0123456789"}`, ""},
		{"subscribe", "", `{"topic":"a/b","future":"1m"}`, "fuzz-token-0123456789"},
		{"publish", "topic.a.b", `{"expires":"1m","desc":"x"}`, "fuzz-token-0123456789"},
		{"publish", "1.2.3", `{"expires":"-1s"}`, "bad"},
		{"query", "", `{"attr":"uid","eq":"u","k":3}`, ""},
		{"page", "", `{"cursor":"zz"}`, ""},
		{"resume", "", `{"sid":"x","after":1}`, ""},
		{"unsubscribe", "", `{"sid":"1-1.2"}`, ""},
	} {
		f.Add(s.op, s.where, []byte(s.body), s.tok)
	}
	store, err := dualdb.Open(filepath.Join(f.TempDir(), "db"), listdb.Config{Durability: listdb.Buffered}, nil)
	if err != nil {
		f.Fatal(err)
	}
	loc, _ := NewLocator(Grid{}, store.Topics())
	svc := service.New(service.Config{Store: store, Encode: loc.EncodePublication})
	f.Cleanup(func() { svc.Close() })
	g := New(Config{Service: svc, Locator: loc, Auth: auth.Tokens{"fuzz-token-0123456789": "fuzzer"}})
	ns := natsServer(f, -1)
	f.Cleanup(ns.Shutdown)
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(nc.Close)
	sink := newNATSSink(g, nc)
	f.Fuzz(func(t *testing.T, op, where string, body []byte, tok string) {
		r := httptest.NewRequest("POST", "/api/op", bytes.NewReader(body))
		r.SetPathValue("op", op)
		r.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		if !json.Valid(w.Body.Bytes()) || w.Code == 0 || w.Code == http.StatusInternalServerError {
			t.Fatalf("HTTP %s %q: %d %q", op, body, w.Code, w.Body.Bytes())
		}
		m := &nats.Msg{Subject: SubjectPrefix + op, Reply: "_INBOX.fuzzer.x", Data: body, Header: nats.Header{"Authorization": {"Bearer " + tok}}}
		g.serveNATS(sink, m, op, where)
	})
}
