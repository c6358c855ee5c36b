package loadgen

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// spool keeps what a connection received — notifications and past results
// as (subscription's operation, publication's operation, arrival) — in a temporary
// file rather than in memory: a 100k-subscription run receives over 100 M
// notifications. Each field is a zigzag varint delta from the record
// before (about 10 bytes a record: a connection's notifications of one
// publication come together). Safe for concurrent use.
type spool struct {
	mu   sync.Mutex
	f    *os.File
	w    *bufio.Writer
	last rec
	buf  [3 * binary.MaxVarintLen64]byte
	n    int64
	err  error
}

// rec names the operations by their index in the run (the publication's
// from its description, -1 when it names none of this run's): a cluster
// stamps a request in each shard it reaches, so stamps do not name
// operations there.
type rec struct{ sub, pub, at int64 }

func newSpool(dir string) (*spool, error) {
	f, err := os.CreateTemp(dir, "loadgen-spool-*")
	if err != nil {
		return nil, fmt.Errorf("loadgen: spool: %w", err)
	}
	return &spool{f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

func (s *spool) add(r rec) {
	s.mu.Lock()
	b := binary.AppendVarint(s.buf[:0], r.sub-s.last.sub)
	b = binary.AppendVarint(b, r.pub-s.last.pub)
	b = binary.AppendVarint(b, r.at-s.last.at)
	if _, err := s.w.Write(b); err != nil && s.err == nil {
		s.err = err
	}
	s.last = r
	s.n++
	s.mu.Unlock()
}

// count is how many records were added.
func (s *spool) count() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// each flushes the spool and calls f with every record, in the order
// added; it may be called more than once.
func (s *spool) each(f func(rec)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return fmt.Errorf("loadgen: spool: %w", s.err)
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("loadgen: spool: %w", err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("loadgen: spool: %w", err)
	}
	defer s.f.Seek(0, io.SeekEnd)
	br := bufio.NewReaderSize(s.f, 256<<10)
	var r rec
	for range s.n {
		var d [3]int64
		for i := range d {
			v, err := binary.ReadVarint(br)
			if err != nil {
				return fmt.Errorf("loadgen: spool %s: %w", s.f.Name(), err)
			}
			d[i] = v
		}
		r = rec{r.sub + d[0], r.pub + d[1], r.at + d[2]}
		f(r)
	}
	return nil
}

// remove deletes the file.
func (s *spool) remove() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.f.Close(), os.Remove(s.f.Name()))
}
