package broker

import (
	"archive/tar"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// acked is what a loader was told, with when it heard it.
type acked struct {
	id string // pid or sid
	at time.Time
}

// loadCell is the k-th of 256 level-4 cells of a face.
func loadCell(face, k int) string {
	return fmt.Sprintf("%d.%d.%d.%d.%d", face, k>>6&3+1, k>>4&3+1, k>>2&3+1, k&3+1)
}

// load sends op requests one at a time over its own connection until stop
// closes, and reports each acknowledgement (field key of the reply).
func load(b *Broker, op, key string, req func(i int) msg, stop <-chan struct{}, out *[]acked, mu *sync.Mutex) error {
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+b.HTTPAddr()+"/ws", nil)
	if err != nil {
		return err
	}
	defer ws.Close()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return nil
		default:
		}
		m := req(i)
		m["op"], m["id"] = op, fmt.Sprint(i)
		if err := ws.WriteJSON(m); err != nil {
			return err
		}
		var r msg
		if err := ws.ReadJSON(&r); err != nil {
			return err
		}
		id, ok := r[key].(string)
		if !ok || r["id"] != fmt.Sprint(i) {
			return fmt.Errorf("%s %d: %v", op, i, r)
		}
		mu.Lock()
		*out = append(*out, acked{id, time.Now()})
		mu.Unlock()
	}
}

// untar extracts a backup stream into dir, refusing paths that leave it.
func untar(r io.Reader, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			return fmt.Errorf("entry %q leaves the directory", h.Name)
		}
		if h.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
			continue
		}
		f, err := os.Create(p)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
}

// TestBackupUnderLoadHoldsEverythingAcknowledgedBeforeIt takes a backup
// through /admin/backup while publishers and subscribers keep writing,
// starts a second broker on it, and finds there every publication and
// subscription acknowledged before the backup was asked for.
func TestBackupUnderLoadHoldsEverythingAcknowledgedBeforeIt(t *testing.T) {
	for _, storage := range []string{"dualdb", "twodb"} {
		t.Run(storage, func(t *testing.T) {
			b := start(t, Config{Storage: storage})
			var mu sync.Mutex
			var pubs, subs []acked
			stop := make(chan struct{})
			errs := make(chan error, 3)
			for w := range 2 {
				go func() {
					errs <- load(b, "publish", "pid", func(i int) msg {
						return msg{"uid": "pete", "cell": loadCell(1, (i*2+w)%256), "expires": "1h", "desc": fmt.Sprintf("w%d-%d", w, i)}
					}, stop, &pubs, &mu)
				}()
			}
			go func() {
				errs <- load(b, "subscribe", "sid", func(i int) msg {
					return msg{"uid": "sue", "cell": loadCell(2, i%256), "future": "1h"}
				}, stop, &subs, &mu)
			}()
			waitFor := func(want int) {
				for {
					mu.Lock()
					n := len(pubs)
					mu.Unlock()
					if n >= want {
						return
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			// Half of what comes before the backup in tables, half in the WAL.
			waitFor(500)
			if err := b.store.Backend().Flush(); err != nil {
				t.Fatal(err)
			}
			waitFor(1000)
			began := time.Now()
			resp, err := http.Get("http://" + b.HTTPAddr() + "/admin/backup")
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				body, _ := io.ReadAll(resp.Body)
				t.Fatalf("backup: %d %s", resp.StatusCode, body)
			}
			restored := filepath.Join(t.TempDir(), "restored")
			if err := untar(resp.Body, restored); err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			close(stop)
			for range 3 {
				if err := <-errs; err != nil {
					t.Fatal(err)
				}
			}
			leftovers, _ := os.ReadDir(filepath.Join(b.cfg.DataDir, backupDir))
			if len(leftovers) != 0 {
				t.Fatalf("the checkpoint stayed behind: %v", leftovers)
			}

			b2 := start(t, Config{Storage: storage, DataDir: restored})
			c := dial(t, b2, nil)
			byCell := map[string]map[string]bool{}
			for k := range 256 {
				q := c.do(msg{"op": "subscribe", "uid": "v", "cell": loadCell(1, k), "past": "1h"})
				wantOp(t, q, "subscribed")
				byCell[loadCell(1, k)] = map[string]bool{}
				for _, pid := range pidsOf(results(q)) {
					byCell[loadCell(1, k)][pid] = true
				}
			}
			found := map[string]bool{}
			for _, set := range byCell {
				for pid := range set {
					found[pid] = true
				}
			}
			before := 0
			for _, p := range pubs {
				if p.at.Before(began) {
					before++
					if !found[p.id] {
						t.Fatalf("publication %s, acknowledged before the backup, is not in it (%d of %d found)", p.id, len(found), len(pubs))
					}
				}
			}
			subsBefore := 0
			for _, s := range subs {
				if !s.at.Before(began) {
					continue
				}
				subsBefore++
				r := c.do(msg{"op": "resume", "uid": "sue", "sid": s.id, "after": 0})
				if r["op"] != "resumed" {
					t.Fatalf("subscription %s, acknowledged before the backup, does not resume from it: %v", s.id, r)
				}
			}
			if before < 1000 || subsBefore == 0 {
				t.Fatalf("only %d publications and %d subscriptions came before the backup", before, subsBefore)
			}
			t.Logf("%s: %d publications and %d subscriptions before the backup, %d publications in it", storage, before, subsBefore, len(found))
		})
	}
}

// TestBackupIsBehindTheMetricsToken checks the endpoint asks for the
// operator's token like /metrics, and takes only GET.
func TestBackupIsBehindTheMetricsToken(t *testing.T) {
	b := start(t, Config{MetricsToken: "s3cret"})
	get := func(method, token string) int {
		req, _ := http.NewRequest(method, "http://"+b.HTTPAddr()+"/admin/backup", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get("GET", ""); code != http.StatusUnauthorized {
		t.Fatalf("without the token: %d", code)
	}
	if code := get("GET", "wrong"); code != http.StatusUnauthorized {
		t.Fatalf("with a wrong token: %d", code)
	}
	if code := get("POST", "s3cret"); code != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %d", code)
	}
	if code := get("GET", "s3cret"); code != http.StatusOK {
		t.Fatalf("with the token: %d", code)
	}
}
