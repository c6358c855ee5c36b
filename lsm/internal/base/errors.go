package base

import (
	"errors"
	"fmt"
)

// ErrCorruption is matched (errors.Is) by every *CorruptionError.
var ErrCorruption = errors.New("corruption")

// CorruptionError names the file and byte offset of data that failed a check.
type CorruptionError struct {
	File   string
	Offset int64
	Reason string
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("corruption in %s at offset %d: %s", e.File, e.Offset, e.Reason)
}

// Is makes errors.Is(err, ErrCorruption) true.
func (e *CorruptionError) Is(target error) bool { return target == ErrCorruption }

// Corruptf builds a *CorruptionError.
func Corruptf(file string, off int64, format string, args ...any) error {
	return &CorruptionError{File: file, Offset: off, Reason: fmt.Sprintf(format, args...)}
}
