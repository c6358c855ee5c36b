package listdb

import (
	"encoding/binary"
	"fmt"
	"time"
)

// Meta keys live in their own namespaces: 'r' topic registry, 'm' metadata.
var clockFloorKey = []byte("m/clock-floor")

// floorMargin is how far the persisted floor runs ahead of the stamps. A
// restart resumes stamping at the floor, so a large margin would freeze
// the clock (stamps 1 ns apart) until the wall clock caught up; a small
// one costs a synced write of the floor about twice per margin.
const floorMargin = int64(2 * time.Second)

// startFloor persists floor in the background. st.mu is held.
func (st *Store) startFloor(floor int64) {
	st.floorBusy = true
	done := make(chan struct{})
	st.floorDone = done
	go func() {
		b := binary.LittleEndian.AppendUint64(nil, uint64(floor))
		if err := st.b.Meta().Set(clockFloorKey, b); err != nil {
			st.floorErr = fmt.Errorf("listdb: persisting the clock floor: %w", err)
		} else {
			st.floor.Store(floor)
		}
		close(done)
	}()
}

// reapFloor notes the end of the floor write in flight, waiting for it if
// wait is set, and returns its error. st.mu is held.
func (st *Store) reapFloor(wait bool) error {
	if st.floorBusy {
		if wait {
			<-st.floorDone
		}
		select {
		case <-st.floorDone:
			st.floorBusy = false
		default:
		}
	}
	if !st.floorBusy && st.floorErr != nil {
		return st.floorErr
	}
	return nil
}
