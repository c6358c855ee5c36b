package gateway

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestWorkersNeverWait: run hands out functions that all wait until
// every one of them has started, as pipelined requests wait for the
// replies before theirs, so run must never wait for a busy worker; and
// stop ends every worker.
func TestWorkersNeverWait(t *testing.T) {
	before := runtime.NumGoroutine()
	w := newWorkers()
	for round := range 3 {
		const n = 50
		var started, finished sync.WaitGroup
		started.Add(n)
		finished.Add(n)
		all := make(chan struct{})
		go func() {
			started.Wait()
			close(all)
		}()
		done := make(chan struct{})
		go func() {
			for range n {
				w.run(func() {
					defer finished.Done()
					started.Done()
					<-all
				})
			}
			finished.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the functions still wait for each other", round)
		}
	}
	w.stop()
	deadline := time.Now().Add(workerIdle / 2) // sooner than idle workers end on their own
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after stop, %d before the workers", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
