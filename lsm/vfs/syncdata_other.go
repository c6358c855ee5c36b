//go:build !linux

package vfs

// SyncData is Sync where the system has no fdatasync.
func (f osFile) SyncData() error { return f.Sync() }
