package vfs

import (
	"errors"
	"io"
	"syscall"
)

// Op names an operation that Inject can fail.
type Op int

const (
	OpCreate Op = iota
	OpWrite
	OpSync
	OpRename
	OpRemove
	OpRead
)

func (o Op) String() string {
	return [...]string{"create", "write", "sync", "rename", "remove", "read"}[o]
}

// Common injected errors.
var (
	EIO    error = syscall.EIO
	ENOSPC error = syscall.ENOSPC
)

// Injector decides whether an operation on a path fails; nil lets it through.
// It must be safe for concurrent use. OpRead covers Read and ReadAt. For
// OpWrite, an error made by ShortWrite persists part of the data first.
type Injector func(op Op, path string) error

// Inject wraps fs so that every operation first asks inj.
func Inject(fs FS, inj Injector) FS { return &injectFS{FS: fs, inj: inj} }

type injectFS struct {
	FS
	inj Injector
}

func (fs *injectFS) Create(name string) (File, error) {
	if err := fs.inj(OpCreate, name); err != nil {
		return nil, err
	}
	f, err := fs.FS.Create(name)
	if err != nil {
		return nil, err
	}
	return &injectFile{File: f, name: name, inj: fs.inj}, nil
}

func (fs *injectFS) Open(name string) (File, error) {
	f, err := fs.FS.Open(name)
	if err != nil {
		return nil, err
	}
	return &injectFile{File: f, name: name, inj: fs.inj}, nil
}

func (fs *injectFS) OpenDir(name string) (File, error) {
	f, err := fs.FS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return &injectFile{File: f, name: name, inj: fs.inj}, nil
}

func (fs *injectFS) Rename(oldname, newname string) error {
	if err := fs.inj(OpRename, newname); err != nil {
		return err
	}
	return fs.FS.Rename(oldname, newname)
}

func (fs *injectFS) Remove(name string) error {
	if err := fs.inj(OpRemove, name); err != nil {
		return err
	}
	return fs.FS.Remove(name)
}

func (fs *injectFS) Lock(name string) (io.Closer, error) { return fs.FS.Lock(name) }

type injectFile struct {
	File
	name string
	inj  Injector
}

// ShortWrite, returned by an Injector for OpWrite, makes the write persist
// only the first half of its data and then fail with err — a write(2) cut
// short by a full disk or a failing device. A nil err fails it with
// io.ErrShortWrite, as os.File.Write does when the kernel writes less.
func ShortWrite(err error) error {
	if err == nil {
		err = io.ErrShortWrite
	}
	return &shortWrite{err: err}
}

type shortWrite struct{ err error }

func (s *shortWrite) Error() string { return "short write: " + s.err.Error() }
func (s *shortWrite) Unwrap() error { return s.err }

func (f *injectFile) Write(p []byte) (int, error) {
	if err := f.inj(OpWrite, f.name); err != nil {
		var sw *shortWrite
		if !errors.As(err, &sw) {
			return 0, err
		}
		n, werr := f.File.Write(p[:len(p)/2])
		if werr != nil {
			return n, werr
		}
		return n, sw.err
	}
	return f.File.Write(p)
}

func (f *injectFile) Read(p []byte) (int, error) {
	if err := f.inj(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.Read(p)
}

func (f *injectFile) Sync() error {
	if err := f.inj(OpSync, f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *injectFile) WriteAt(p []byte, off int64) (int, error) {
	if err := f.inj(OpWrite, f.name); err != nil {
		return 0, err
	}
	return f.File.WriteAt(p, off)
}

func (f *injectFile) SyncData() error {
	if err := f.inj(OpSync, f.name); err != nil {
		return err
	}
	return f.File.SyncData()
}

func (f *injectFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.inj(OpRead, f.name); err != nil {
		return 0, err
	}
	return f.File.ReadAt(p, off)
}
