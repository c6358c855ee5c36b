package broker

import (
	"archive/tar"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// backupDir, under the data directory, holds checkpoints while they are
// streamed: on the same file system, so tables can be hard-linked. The
// store ignores a directory it did not make.
const backupDir = "backups-in-progress"

// serveBackup answers GET /admin/backup with a tar of an online checkpoint
// of the store: every publication and subscription acknowledged before the
// request arrived. Extracted, it is a data directory a broker starts on;
// the catalog is left out, as a broker rebuilds it from the store at start.
func (b *Broker) serveBackup(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "method not allowed: GET /admin/backup", http.StatusMethodNotAllowed)
		return
	}
	if b.store == nil {
		http.Error(w, "conflict: a cluster node keeps its shards' logs in JetStream, not in a store of its own; back up the JetStream streams instead (docs/operations.md)", http.StatusConflict)
		return
	}
	if !b.ready.Load() {
		http.Error(w, "unavailable: the broker is starting or stopping", http.StatusServiceUnavailable)
		return
	}
	dir, err := os.MkdirTemp(b.backupRoot(), "checkpoint-")
	if err == nil {
		// Checkpoint wants a directory that does not exist yet.
		err = os.Remove(dir)
	}
	if err != nil {
		b.log.Error("backup: making a checkpoint directory", "err", err)
		http.Error(w, "internal: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	if err := b.store.Backend().Checkpoint(dir); err != nil {
		b.log.Error("backup: checkpoint failed", "err", err)
		http.Error(w, "internal: checkpoint failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	grid, err := os.ReadFile(filepath.Join(b.cfg.DataDir, gridFile))
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, gridFile), grid, 0o644)
	}
	if err != nil {
		http.Error(w, "internal: "+err.Error(), http.StatusInternalServerError)
		return
	}
	// A large store takes longer than the HTTP listener's reply timeout.
	http.NewResponseController(w).SetWriteDeadline(time.Time{})
	w.Header().Set("Content-Type", "application/x-tar")
	w.Header().Set("Content-Disposition", `attachment; filename="cellcast-backup.tar"`)
	n, err := writeTar(w, dir)
	if err != nil {
		// The client sees a tar without its end marker: an error there.
		b.log.Warn("backup: streaming failed", "err", err, "bytes", n)
		return
	}
	b.log.Info("backup streamed", "bytes", n, "took", time.Since(start).Round(time.Millisecond))
}

// backupRoot makes (and returns) the directory checkpoints are made in.
func (b *Broker) backupRoot() string {
	root := filepath.Join(b.cfg.DataDir, backupDir)
	os.MkdirAll(root, 0o755)
	return root
}

// removeStaleBackups removes checkpoints a stop or crash left mid-stream.
func (b *Broker) removeStaleBackups() {
	if err := os.RemoveAll(filepath.Join(b.cfg.DataDir, backupDir)); err != nil {
		b.log.Warn("removing unfinished backups", "err", err)
	}
}

// writeTar writes the regular files under dir, with paths relative to it,
// and returns the bytes of file content written.
func writeTar(w io.Writer, dir string) (int64, error) {
	tw := tar.NewWriter(w)
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			hdr.Name += "/"
			return tw.WriteHeader(hdr)
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.Copy(tw, f)
		total += n
		return err
	})
	if err != nil {
		return total, err
	}
	return total, tw.Close()
}
