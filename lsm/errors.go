package lsm

import (
	"errors"

	"github.com/seed84792017/cellcast/lsm/internal/base"
	"github.com/seed84792017/cellcast/lsm/vfs"
)

var (
	// ErrNotFound is returned by Get for a key with no value.
	ErrNotFound = errors.New("lsm: not found")
	// ErrClosed is returned by operations on a closed DB.
	ErrClosed = errors.New("lsm: closed")
	// ErrKeyTooLarge and ErrValueTooLarge refuse oversized input.
	ErrKeyTooLarge   = errors.New("lsm: key too large")
	ErrValueTooLarge = errors.New("lsm: value too large")
	// ErrBatchTooLarge refuses a batch over MaxBatchSize.
	ErrBatchTooLarge = errors.New("lsm: batch too large")
	// ErrEmptyKey refuses a zero-length key.
	ErrEmptyKey = errors.New("lsm: empty key")
	// ErrWritesRefused wraps the first background or WAL failure; once it
	// happens every later write fails with it until the DB is reopened.
	ErrWritesRefused = errors.New("lsm: writes refused after an earlier failure")
	// ErrLocked is returned by Open when another opener holds the directory.
	ErrLocked = vfs.ErrLocked
	// ErrInvalidOptions is matched by option validation errors.
	ErrInvalidOptions = errors.New("lsm: invalid options")
	// ErrMergerMismatch refuses to open a DB written with another merger.
	ErrMergerMismatch = errors.New("lsm: merger name differs from the one the DB was created with")
	// ErrCorruption is matched by every error about data failing a check;
	// the concrete type is *CorruptionError, naming file and offset.
	ErrCorruption = base.ErrCorruption
)

// CorruptionError names the file and offset of bad data.
type CorruptionError = base.CorruptionError
