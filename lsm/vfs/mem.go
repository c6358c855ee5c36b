package vfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"sync"
)

// MemFS is an in-memory FS that can simulate a crash. Its zero value is not
// usable; call NewMem.
type MemFS struct {
	// crash makes CrashClone a moment: file writes and syncs hold its
	// read side, CrashClone its write side. Cloned file by file while
	// writes went on, an image could hold a newer file's write and miss an
	// older file's sync that came before it, which no crash can.
	crash sync.RWMutex
	mu    sync.Mutex
	// dirs holds each directory's current entries; durable holds what a
	// crash would leave: the entries as of the directory's last sync.
	dirs    map[string]map[string]*memNode
	durable map[string]map[string]*memNode
	locks   map[string]bool
}

type memNode struct {
	mu     sync.Mutex
	data   []byte
	synced []byte
}

// NewMem returns an empty in-memory file system with a root directory.
func NewMem() *MemFS {
	fs := &MemFS{
		dirs:    map[string]map[string]*memNode{},
		durable: map[string]map[string]*memNode{},
		locks:   map[string]bool{},
	}
	fs.dirs["/"] = map[string]*memNode{}
	fs.durable["/"] = map[string]*memNode{}
	return fs
}

func split(name string) (dir, base string) {
	name = filepath.Clean("/" + name)
	return filepath.Dir(name), filepath.Base(name)
}

func notExist(op, name string) error {
	return &os.PathError{Op: op, Path: name, Err: os.ErrNotExist}
}

func (fs *MemFS) lookup(op, name string) (*memNode, error) {
	dir, base := split(name)
	ents, ok := fs.dirs[dir]
	if !ok {
		return nil, notExist(op, name)
	}
	n, ok := ents[base]
	if !ok {
		return nil, notExist(op, name)
	}
	return n, nil
}

// Create implements FS.
func (fs *MemFS) Create(name string) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir, base := split(name)
	ents, ok := fs.dirs[dir]
	if !ok {
		return nil, notExist("create", name)
	}
	n := &memNode{}
	ents[base] = n
	return &memFile{fs: fs, node: n, name: name, writable: true}, nil
}

// Open implements FS.
func (fs *MemFS) Open(name string) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.lookup("open", name)
	if err != nil {
		return nil, err
	}
	return &memFile{fs: fs, node: n, name: name}, nil
}

// OpenDir implements FS. Syncing the returned file makes the directory's
// current entries durable.
func (fs *MemFS) OpenDir(name string) (File, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir := filepath.Clean("/" + name)
	if _, ok := fs.dirs[dir]; !ok {
		return nil, notExist("opendir", name)
	}
	return &memDir{fs: fs, dir: dir}, nil
}

// Remove implements FS.
func (fs *MemFS) Remove(name string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if _, err := fs.lookup("remove", name); err != nil {
		return err
	}
	dir, base := split(name)
	delete(fs.dirs[dir], base)
	return nil
}

// Rename implements FS.
func (fs *MemFS) Rename(oldname, newname string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.lookup("rename", oldname)
	if err != nil {
		return err
	}
	nd, nb := split(newname)
	ents, ok := fs.dirs[nd]
	if !ok {
		return notExist("rename", newname)
	}
	od, ob := split(oldname)
	delete(fs.dirs[od], ob)
	ents[nb] = n
	return nil
}

// Link implements FS: both names share the node, as a hard link does.
func (fs *MemFS) Link(oldname, newname string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	n, err := fs.lookup("link", oldname)
	if err != nil {
		return err
	}
	nd, nb := split(newname)
	ents, ok := fs.dirs[nd]
	if !ok {
		return notExist("link", newname)
	}
	if _, taken := ents[nb]; taken {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: os.ErrExist}
	}
	ents[nb] = n
	return nil
}

// MkdirAll implements FS. Directories are durable at once.
func (fs *MemFS) MkdirAll(dir string) error {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dir = filepath.Clean("/" + dir)
	for d := dir; ; d = filepath.Dir(d) {
		if _, ok := fs.dirs[d]; !ok {
			fs.dirs[d] = map[string]*memNode{}
			fs.durable[d] = map[string]*memNode{}
		}
		if d == "/" {
			return nil
		}
	}
}

// List implements FS.
func (fs *MemFS) List(dir string) ([]string, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	ents, ok := fs.dirs[filepath.Clean("/"+dir)]
	if !ok {
		return nil, notExist("list", dir)
	}
	names := make([]string, 0, len(ents))
	for n := range ents {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// Exists implements FS.
func (fs *MemFS) Exists(name string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	_, err := fs.lookup("stat", name)
	return err == nil
}

// Lock implements FS. Locks are not files in MemFS and vanish in a crash.
func (fs *MemFS) Lock(name string) (io.Closer, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	key := filepath.Clean("/" + name)
	if fs.locks[key] {
		return nil, fmt.Errorf("%w: %s", ErrLocked, name)
	}
	fs.locks[key] = true
	return closerFunc(func() error {
		fs.mu.Lock()
		defer fs.mu.Unlock()
		delete(fs.locks, key)
		return nil
	}), nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// CrashOptions shape what CrashClone keeps.
type CrashOptions struct {
	// Rand, when set, keeps a random prefix of each file's unsynced tail, as a
	// real crash may persist part of what was written but not synced, and a
	// random choice of the pages rewritten in place (File.WriteAt) since the
	// last sync, which the disk may write in any order.
	Rand *rand.Rand
	// Tail says what fills the rest of the unsynced tail after that prefix.
	Tail TailMode
}

// TailMode is what a crash leaves in the unsynced part of a file that it
// did not keep.
type TailMode int

const (
	// TailDropped: the file ends after the kept prefix.
	TailDropped TailMode = iota
	// TailZeroed: the file keeps its full size but the rest reads as
	// zeros, as when the size reached the disk before the data.
	TailZeroed
	// TailGarbage: the rest holds random bytes (needs Rand), as when
	// blocks were allocated but hold stale or torn data.
	TailGarbage
)

// CrashClone returns the file system a crash would leave behind: only the
// directory entries made durable by a directory sync, each holding the file
// contents as of its last sync (plus, with opts.Rand, a random part of what
// was written since). The receiver is left untouched.
func (fs *MemFS) CrashClone(opts CrashOptions) *MemFS {
	fs.crash.Lock()
	defer fs.crash.Unlock()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := NewMem()
	for dir, ents := range fs.durable {
		if out.dirs[dir] == nil {
			out.dirs[dir] = map[string]*memNode{}
			out.durable[dir] = map[string]*memNode{}
		}
		for name, n := range ents {
			n.mu.Lock()
			data := append([]byte(nil), n.synced...)
			if opts.Rand != nil {
				// Pages rewritten in place since the last sync reach the
				// disk in no particular order: each one does or not.
				common := min(len(n.data), len(n.synced))
				for p := 0; p < common; p += crashPage {
					e := min(p+crashPage, common)
					if !bytes.Equal(n.data[p:e], n.synced[p:e]) && opts.Rand.Intn(2) == 0 {
						copy(data[p:e], n.data[p:e])
					}
				}
			}
			if len(n.data) > len(n.synced) {
				extra := 0
				if opts.Rand != nil {
					extra = opts.Rand.Intn(len(n.data) - len(n.synced) + 1)
				}
				data = append(data, n.data[len(n.synced):len(n.synced)+extra]...)
				switch rest := len(n.data) - len(data); {
				case opts.Tail == TailZeroed:
					data = append(data, make([]byte, rest)...)
				case opts.Tail == TailGarbage && opts.Rand != nil:
					g := make([]byte, rest)
					opts.Rand.Read(g)
					data = append(data, g...)
				}
			}
			n.mu.Unlock()
			c := &memNode{data: data, synced: append([]byte(nil), data...)}
			out.dirs[dir][name] = c
			out.durable[dir][name] = c
		}
	}
	return out
}

// crashPage is the unit a crash keeps or loses of data rewritten in place.
const crashPage = 4 << 10

type memFile struct {
	fs       *MemFS
	node     *memNode
	name     string
	pos      int64
	writable bool
	closed   bool
}

var errClosed = errors.New("vfs: file already closed")

func (f *memFile) Read(p []byte) (int, error) {
	if f.closed {
		return 0, errClosed
	}
	n, err := f.ReadAt(p, f.pos)
	f.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	n, err := f.WriteAt(p, f.pos)
	f.pos += int64(n)
	return n, err
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	if f.closed {
		return 0, errClosed
	}
	if !f.writable {
		return 0, fmt.Errorf("vfs: %s opened read-only", f.name)
	}
	f.fs.crash.RLock()
	defer f.fs.crash.RUnlock()
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	if end := off + int64(len(p)); end > int64(len(f.node.data)) {
		f.node.data = append(f.node.data, make([]byte, end-int64(len(f.node.data)))...)
	}
	copy(f.node.data[off:], p)
	return len(p), nil
}

// SyncData is Sync: the model keeps no metadata apart from the data.
func (f *memFile) SyncData() error { return f.Sync() }

func (f *memFile) Sync() error {
	if f.closed {
		return errClosed
	}
	f.fs.crash.RLock()
	defer f.fs.crash.RUnlock()
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	f.node.synced = append(f.node.synced[:0], f.node.data...)
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.node.mu.Lock()
	defer f.node.mu.Unlock()
	return int64(len(f.node.data)), nil
}

func (f *memFile) Close() error {
	if f.closed {
		return errClosed
	}
	f.closed = true
	return nil
}

type memDir struct {
	fs  *MemFS
	dir string
}

func (d *memDir) Read([]byte) (int, error)          { return 0, errors.New("vfs: read of a directory") }
func (d *memDir) ReadAt([]byte, int64) (int, error) { return 0, errors.New("vfs: read of a directory") }
func (d *memDir) Write([]byte) (int, error)         { return 0, errors.New("vfs: write to a directory") }
func (d *memDir) WriteAt([]byte, int64) (int, error) {
	return 0, errors.New("vfs: write to a directory")
}
func (d *memDir) SyncData() error      { return d.Sync() }
func (d *memDir) Size() (int64, error) { return 0, nil }
func (d *memDir) Close() error         { return nil }

func (d *memDir) Sync() error {
	d.fs.mu.Lock()
	defer d.fs.mu.Unlock()
	cur := d.fs.dirs[d.dir]
	dur := make(map[string]*memNode, len(cur))
	for k, v := range cur {
		dur[k] = v
	}
	d.fs.durable[d.dir] = dur
	return nil
}
