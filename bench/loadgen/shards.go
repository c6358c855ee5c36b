package loadgen

import (
	"sync/atomic"

	"github.com/seed84792017/cellcast/bench/workload"
	"github.com/seed84792017/cellcast/dewey"
)

// Delivered counts what arrived for the subscriptions of one shard: in a
// cluster, what the node serving that shard matched and sent.
type Delivered struct {
	Notifications int64 `json:"notifications"`
	PastResults   int64 `json:"past_results"`
}

// shards names each operation's shard (Config.Shard), once before the run
// so the readers' hot path only indexes, and counts what arrives per
// shard.
type shards struct {
	names []string // distinct
	of    []int32  // by operation: its shard, in names
	notes []atomic.Int64
	past  []atomic.Int64
}

func newShards(ops []workload.Op, shard func(dewey.ID) string) shards {
	if shard == nil {
		return shards{}
	}
	s := shards{of: make([]int32, len(ops))}
	index := map[string]int32{}
	for i := range ops {
		name := shard(ops[i].Cell)
		k, ok := index[name]
		if !ok {
			k = int32(len(s.names))
			index[name] = k
			s.names = append(s.names, name)
		}
		s.of[i] = k
	}
	s.notes = make([]atomic.Int64, len(s.names))
	s.past = make([]atomic.Int64, len(s.names))
	return s
}

// name is operation op's shard ("" without Config.Shard).
func (s *shards) name(op int) string {
	if s.of == nil {
		return ""
	}
	return s.names[s.of[op]]
}

// note counts a notification for the subscription of operation sub.
func (s *shards) note(sub int) {
	if s.of != nil {
		s.notes[s.of[sub]].Add(1)
	}
}

// addPast counts n past results in the reply to operation sub.
func (s *shards) addPast(sub, n int) {
	if s.of != nil {
		s.past[s.of[sub]].Add(int64(n))
	}
}

// delivered is what arrived, by shard; nil without Config.Shard.
func (s *shards) delivered() map[string]Delivered {
	if s.of == nil {
		return nil
	}
	out := map[string]Delivered{}
	for k, name := range s.names {
		if d := (Delivered{Notifications: s.notes[k].Load(), PastResults: s.past[k].Load()}); d != (Delivered{}) {
			out[name] = d
		}
	}
	return out
}
