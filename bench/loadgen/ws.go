package loadgen

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed84792017/cellcast/bench/workload"
	"github.com/seed84792017/cellcast/client"
)

// wsConn is one client connection carrying many users' requests. The
// client reconnects by itself when the broker closes it (a slow consumer
// is cut, for one) and resumes every subscription from the last sequence
// number it received.
type wsConn struct {
	r      *run
	c      *client.Client
	tasks  chan task
	window chan struct{}
	wg     sync.WaitGroup // requests in flight

	// cutting is set while this side drops the connection, so that the
	// drop does not count as the broker's.
	cutting atomic.Bool
	got     *spool // the notifications, filed by the inline handler on the client's reader
	// lastDesc, lastPub and lastAt remember the last publication note
	// read and when: a grouped frame brings one publication to many
	// subscriptions in a row, at one time.
	lastDesc string
	lastPub  int64
	lastAt   int64
}

// dialWS dials the i-th of the brokers (mod their number), with the
// others as its fallbacks.
func dialWS(r *run, i int) (*wsConn, error) {
	urls := r.cfg.WSURLs
	i %= len(urls)
	url, fallback := urls[i], append(slices.Clone(urls[i+1:]), urls[:i]...)
	c := &wsConn{r: r, tasks: make(chan task, 1<<14), window: make(chan struct{}, r.cfg.Window)}
	var err error
	if c.got, err = newSpool(r.cfg.SpoolDir); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.c, err = client.Dial(ctx, url, client.Options{
		MinBackoff: 10 * time.Millisecond, MaxBackoff: time.Second,
		OnDisconnect:          c.disconnected,
		Fallback:              fallback,
		SeparateNotifications: r.cfg.Separate,
		Log:                   slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, errors.Join(err, c.got.remove())
	}
	return c, nil
}

func closeAll(cs []*wsConn) {
	for _, c := range cs {
		if c != nil {
			c.c.Close()
			c.got.remove()
		}
	}
}

// serve sends the connection's tasks until they end, waits for their
// replies and calls done. It takes a task only once the window has room
// for it: a closed-loop request is stamped as it goes, as NATS core's
// peer stamps its publications, and a task shared among connections goes
// to one that can send it now.
func (c *wsConn) serve(ctx context.Context, done func()) {
	defer done()
	for {
		c.window <- struct{}{}
		t, ok := <-c.tasks
		if !ok {
			<-c.window
			break
		}
		switch {
		case ctx.Err() != nil:
			<-c.window
			if !t.cut {
				c.r.finished()
			}
		case t.cut:
			<-c.window
			c.cut()
		default:
			c.do(t)
		}
	}
	c.wg.Wait()
}

// do sends an operation, holding a place in the window; its reply is
// filed on a goroutine of its own, which gives the place back.
func (c *wsConn) do(t task) {
	t.sent()
	c.r.sent.Add(1)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() { <-c.window; c.r.finished() }()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		op := t.op
		if op.Kind == workload.Subscribe {
			sub, err := c.c.Subscribe(ctx, client.SubscribeRequest{UID: op.Uid, Location: client.Cell(op.Cell.String()),
				Past: op.Past, Future: op.Future, SelfJoin: op.SelfJoin, Inline: true,
				Handler: func(n client.Notification) { c.note(t.index, n) }})
			c.r.subscribed(t, sub, err)
			return
		}
		p, err := c.c.Publish(ctx, client.PublishRequest{UID: op.Uid, Location: client.Cell(op.Cell.String()),
			Expires: op.Expires, Desc: c.r.desc(t), SelfJoin: op.SelfJoin})
		c.r.published(t, p, err)
	}()
}

// cut drops the connection between requests; the client reconnects and
// resumes.
func (c *wsConn) cut() {
	c.wg.Wait()
	c.cutting.Store(true)
	c.c.ForceReconnect()
	c.r.drops.Add(1)
}

func (c *wsConn) disconnected(err error) {
	if c.cutting.Swap(false) {
		return
	}
	why := err.Error()
	c.r.brokerCut(why)
}

// note files a notification for the subscription of operation sub; the
// client calls it on its reader, one at a time.
func (c *wsConn) note(sub int, n client.Notification) {
	if d := n.Publication.Desc; d != c.lastDesc || c.lastDesc == "" {
		c.lastDesc, c.lastPub, c.lastAt = d, c.r.pubOf(d), time.Now().UnixNano()
	}
	c.got.add(rec{sub: int64(sub), pub: c.lastPub, at: c.lastAt})
	c.r.notes.Add(1)
	c.r.shards.note(sub)
}

// errKind names an error by its protocol code, or transport.
func errKind(err error) (string, string) {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Code, e.Message
	}
	return "transport", err.Error()
}
