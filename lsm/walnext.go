package lsm

import (
	"github.com/seed84792017/cellcast/lsm/vfs"
)

// preparedWAL is a log file made ahead of the memtable switch that will
// write to it, so that a switch costs no file creation and no directory
// sync while every writer waits on it (1–14 ms each on a busy broker).
type preparedWAL struct {
	num  uint64
	f    vfs.File // set, or err, once done is closed
	err  error
	done chan struct{}
}

// takeWAL returns the log for a memtable switch and starts preparing the
// one after it; d.mu is held. The first switch creates its own: a DB
// that never switches keeps no spare file.
func (d *DB) takeWAL() (*walWriter, error) {
	p := d.nextWAL
	d.nextWAL = nil
	var w *walWriter
	if p == nil {
		var err error
		if w, err = d.createWAL(d.vs.newFileNum()); err != nil {
			return nil, err
		}
	} else {
		<-p.done // the goroutine takes no lock: waiting under d.mu is safe
		if p.err != nil {
			return nil, p.err
		}
		w = d.openWAL(p.num, p.f)
	}
	p = &preparedWAL{num: d.vs.newFileNum(), done: make(chan struct{})}
	d.nextWAL = p
	d.bgWG.Add(1)
	go func() {
		defer d.bgWG.Done()
		defer close(p.done)
		p.f, p.err = d.createWALFile(p.num)
	}()
	return w, nil
}

// dropNextWAL removes the prepared log file, unused, at Close; d.mu is
// held and the preparation is done (Close waited for bgWG).
func (d *DB) dropNextWAL() {
	p := d.nextWAL
	d.nextWAL = nil
	if p == nil || p.err != nil {
		return
	}
	p.f.Close()
	if err := d.fs.Remove(makeFilename(d.fs, d.dir, fileTypeLog, p.num)); err != nil {
		d.opts.Logger.Warn("lsm: removing the unused next WAL", "num", p.num, "err", err)
	}
}
