package delivery

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/subscriptions"
)

// TestSubscribersBehindTogetherStopPublishers: while a quarter or more of
// the sinks holding routes stay behind longer than MaxLag and go on
// catching up, Publish refuses with overloaded (Behind); a sink that
// stopped reading, or one slow sink among many, does not stop publishers;
// once the subscribers have caught up, publications are taken again.
func TestSubscribersBehindTogetherStopPublishers(t *testing.T) {
	ctx := context.Background()
	cell := subscriptions.Cell{NS: subscriptions.NSCell, ID: dewey.MustParse("1")}
	publish := func(hub *Hub) error {
		return hub.Publish(ctx, &subscriptions.PublishRequest{Uid: "p", Cell: cell, Expires: time.Hour}, func(*subscriptions.PublishResult) {})
	}
	// setup routes one subscription to each sink and publishes until the
	// slow ones lag.
	setup := func(t *testing.T, slow, fast int) (*Hub, []*boundedSink, []*boundedSink) {
		hub, _ := openHub(t)
		hub.cfg.MaxLag = 50 * time.Millisecond
		var s, f []*boundedSink
		for i := range slow + fast {
			k := newBoundedSink(1)
			if i < slow {
				s = append(s, k)
			} else {
				k.room = 1 << 30
				f = append(f, k)
			}
			subscribeTo(t, hub, k, fmt.Sprint("u", i), cell, time.Hour)
		}
		for range 3 {
			if err := publish(hub); err != nil {
				t.Fatal(err)
			}
		}
		hub.Drain()
		if st := hub.Stats(); st.Lagging != slow {
			t.Fatalf("%d routes lagging, want %d", st.Lagging, slow)
		}
		return hub, s, f
	}
	// refusedWithin publishes, the slow sinks catching up without room
	// (active, still behind) when active, until a publish is refused as
	// behind or the time is up.
	refusedWithin := func(t *testing.T, hub *Hub, slow []*boundedSink, active bool, d time.Duration) bool {
		for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if active {
				for _, k := range slow {
					if _, err := hub.CatchUp(ctx, k); err != nil {
						t.Fatal(err)
					}
				}
			}
			err := publish(hub)
			var oe *OverloadedError
			if errors.As(err, &oe) && oe.Behind && errors.Is(err, ErrOverloaded) {
				return true
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		return false
	}

	t.Run("together", func(t *testing.T) {
		hub, slow, _ := setup(t, 2, 1)
		if !refusedWithin(t, hub, slow, true, 3*time.Second) {
			t.Fatal("two of three sinks behind and catching up: publications still taken")
		}
		// They read, and catch up: publications are taken again.
		for range 1000 {
			hub.Drain()
			for _, k := range slow {
				k.drain()
				if _, err := hub.CatchUp(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			if hub.Stats().Lagging == 0 {
				break
			}
		}
		if st := hub.Stats(); st.Lagging != 0 {
			t.Fatalf("still lagging: %+v", st)
		}
		time.Sleep(lagCheckEvery + 10*time.Millisecond)
		if err := publish(hub); err != nil {
			t.Fatalf("caught up, yet: %v", err)
		}
	})
	t.Run("stopped", func(t *testing.T) {
		hub, slow, _ := setup(t, 1, 1)
		if refusedWithin(t, hub, slow, false, 100*time.Millisecond+2*lagCheckEvery) {
			t.Fatal("a sink that stopped reading stopped the publishers")
		}
	})
	t.Run("one slow among many", func(t *testing.T) {
		hub, slow, _ := setup(t, 1, 4)
		if refusedWithin(t, hub, slow, true, 100*time.Millisecond+2*lagCheckEvery) {
			t.Fatal("one slow sink of five stopped the publishers")
		}
	})
}
