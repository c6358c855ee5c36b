package gateway

import (
	"sync"
	"time"
)

// workers runs functions on goroutines that outlive them. A WebSocket
// request runs apart from its connection's reader (pipeline.go), and its
// call path through the store is deep: on a fresh goroutine each, the
// stack grew by copying on every request (4.3% of the broker's CPU at 1:3
// in peerbench). An
// idle worker keeps the stack it grew and takes the next function; one
// idle for workerIdle (short: idle workers hold their stacks), or once
// stop is called, ends.
type workers struct {
	idle chan func() // unbuffered: a send succeeds only into an idle worker
	quit chan struct{}
	once sync.Once
}

const workerIdle = time.Second

func newWorkers() *workers { return &workers{idle: make(chan func()), quit: make(chan struct{})} }

// stop ends the idle workers, and each busy one once its function returns.
func (w *workers) stop() { w.once.Do(func() { close(w.quit) }) }

// run calls fn on an idle worker, or on a new one if none is idle.
func (w *workers) run(fn func()) {
	select {
	case w.idle <- fn:
	default:
		go w.work(fn)
	}
}

func (w *workers) work(fn func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		fn()
		t.Reset(workerIdle)
		select {
		case fn = <-w.idle:
		case <-t.C:
			return
		case <-w.quit:
			return
		}
	}
}
