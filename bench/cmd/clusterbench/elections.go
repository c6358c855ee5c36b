package main

import (
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/bench/procs"
)

// electionWatch counts the stream leader elections the cluster's NATS
// servers announce. In a steady run each one is needless: a replica that
// missed its leader's heartbeats (--cluster-election-timeout too short
// for the machine's load), and the shard's writes wait for it.
type electionWatch struct {
	nc *nats.Conn
	n  atomic.Int64
}

// electionSubject is where JetStream announces a stream's new leader.
const electionSubject = "$JS.EVENT.ADVISORY.STREAM.LEADER_ELECTED.>"

// watchElections listens on nd's embedded NATS server, which the bench's
// brokers run without auth.
func watchElections(nd *procs.Node) (*electionWatch, error) {
	nc, err := nats.Connect("nats://" + nd.NATS)
	if err != nil {
		return nil, err
	}
	w := &electionWatch{nc: nc}
	if _, err := nc.Subscribe(electionSubject, func(*nats.Msg) { w.n.Add(1) }); err != nil {
		nc.Close()
		return nil, err
	}
	if err := nc.Flush(); err != nil {
		nc.Close()
		return nil, err
	}
	return w, nil
}

// stop ends the watch and returns the elections seen.
func (w *electionWatch) stop() int64 {
	w.nc.Close()
	return w.n.Load()
}
