package vfs

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// File is an open file. ReadAt may be called concurrently.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	// WriteAt writes at off without moving the offset Write uses.
	io.WriterAt
	io.Closer
	Sync() error
	// SyncData is Sync without the metadata a read of the data does not
	// need (fdatasync): no journal commit when the file's size and blocks
	// are as they were at the last sync.
	SyncData() error
	Size() (int64, error)
}

// FS is the set of file-system operations the engine uses.
type FS interface {
	// Create makes a new empty file, truncating any existing one.
	Create(name string) (File, error)
	// Open opens a file for reading.
	Open(name string) (File, error)
	// OpenDir opens a directory so it can be synced.
	OpenDir(name string) (File, error)
	Remove(name string) error
	Rename(oldname, newname string) error
	// Link makes newname a hard link to oldname: another name for the same
	// bytes, which a checkpoint uses for immutable tables.
	Link(oldname, newname string) error
	MkdirAll(dir string) error
	// List returns the names (not paths) of a directory's entries.
	List(dir string) ([]string, error)
	// Exists reports whether name exists.
	Exists(name string) bool
	// Lock takes an exclusive lock on name, creating it if needed. It fails
	// when another holder (another process, or another DB in this one) has it.
	Lock(name string) (io.Closer, error)
}

// ErrLocked is returned by Lock when another holder has the lock.
var ErrLocked = errors.New("vfs: lock held by another process or DB")

// Join joins path elements.
func Join(elem ...string) string { return filepath.Join(elem...) }

// Default is the operating system's file system.
var Default FS = osFS{}

type osFS struct{}

type osFile struct{ *os.File }

func (f osFile) Size() (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

func (osFS) Create(name string) (File, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Open(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) OpenDir(name string) (File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

func (osFS) Remove(name string) error             { return os.Remove(name) }
func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }
func (osFS) Link(oldname, newname string) error   { return os.Link(oldname, newname) }
func (osFS) MkdirAll(dir string) error            { return os.MkdirAll(dir, 0o755) }

func (osFS) List(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, nil
}

func (osFS) Exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}
