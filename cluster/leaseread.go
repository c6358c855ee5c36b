package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
)

// leaseEntry is a key's last value in the lease bucket and its revision.
type leaseEntry struct {
	value string
	rev   uint64
}

// leaseReader reads the last entries of many keys of a KV bucket in one
// batched direct get (multi_last), which any current replica answers, as
// a KV Get does: one request a look at the leases rather than one per
// shard, each waited for in turn. It belongs to the lease loop: one read
// at a time.
type leaseReader struct {
	nc      *nats.Conn
	subject string // the bucket's stream's direct get
	prefix  string // a key's subject less the key
	inbox   string
	sub     *nats.Subscription
	msgs    chan *nats.Msg
	reads   uint64 // read i is answered on inbox.i, so a late answer to an earlier one is told apart
}

// readAtOnce bounds the keys of one read: nats-server answers a
// multi_last get with at most 1,024 messages.
const readAtOnce = 1024

func newLeaseReader(nc *nats.Conn, bucket string) (*leaseReader, error) {
	r := &leaseReader{nc: nc, subject: "$JS.API.DIRECT.GET.KV_" + bucket, prefix: "$KV." + bucket + ".",
		inbox: nc.NewInbox(), msgs: make(chan *nats.Msg, readAtOnce+1)}
	var err error
	if r.sub, err = nc.ChanSubscribe(r.inbox+".*", r.msgs); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *leaseReader) close() { r.sub.Unsubscribe() }

// read returns the last entry of each of keys that has one; a key never
// written, deleted or purged is absent.
func (r *leaseReader) read(ctx context.Context, keys []string) (map[string]leaseEntry, error) {
	out := make(map[string]leaseEntry, len(keys))
	for len(keys) > 0 {
		k := min(len(keys), readAtOnce)
		if err := r.readSome(ctx, keys[:k], out); err != nil {
			return nil, err
		}
		keys = keys[k:]
	}
	return out, nil
}

func (r *leaseReader) readSome(ctx context.Context, keys []string, out map[string]leaseEntry) error {
	var req struct {
		MultiLast []string `json:"multi_last"`
	}
	for _, k := range keys {
		req.MultiLast = append(req.MultiLast, r.prefix+k)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r.reads++
	reply := r.inbox + "." + strconv.FormatUint(r.reads, 10)
	if err := r.nc.PublishRequest(r.subject, reply, body); err != nil {
		return err
	}
	for {
		var m *nats.Msg
		select {
		case m = <-r.msgs:
		case <-ctx.Done():
			return fmt.Errorf("cluster: reading the leases: %w", ctx.Err())
		}
		if m.Subject != reply {
			continue // the end of a read that gave up waiting
		}
		rev, end, err := directAnswer(m)
		if err != nil {
			return fmt.Errorf("cluster: reading the leases: %w", err)
		}
		if end {
			return nil
		}
		key, ok := strings.CutPrefix(m.Header.Get("Nats-Subject"), r.prefix)
		if !ok {
			return fmt.Errorf("cluster: reading the leases: an answer names %q", m.Header.Get("Nats-Subject"))
		}
		if op := m.Header.Get("KV-Operation"); op == "DEL" || op == "PURGE" {
			continue
		}
		out[key] = leaseEntry{value: string(m.Data), rev: rev}
	}
}
