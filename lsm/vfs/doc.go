// Package vfs is the engine's file-system seam.
//
// Default is the operating system. MemFS keeps files in memory and models
// durability strictly: file contents survive a simulated crash only up to the
// last File.Sync, and creations, renames and removals only once the directory
// itself was synced (as on Linux ext4/xfs without special mount options);
// the unsynced tail a crash leaves can be dropped, partly kept, zeroed or
// garbage, and pages rewritten in place survive one by one, in no order
// (CrashOptions). Inject wraps any FS and fails chosen operations
// with chosen errors — reads included, and writes cut short (ShortWrite) — so
// tests can check that the engine notices every failed read, write, sync
// and rename.
package vfs
