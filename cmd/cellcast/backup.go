package main

import (
	"archive/tar"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
)

// backup fetches an online checkpoint of a broker's store from its
// /admin/backup endpoint and unpacks it into a new data directory.
func backup(ctx context.Context, args []string, e env, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("backup", flag.ContinueOnError)
	admin, token := adminFlags(fs)
	out := fs.String("out", "", "the data directory to create (it must not exist); start a broker on it with broker --data DIR")
	if code, ok := parse(fs, args, e, stdout, stderr); !ok {
		return code
	}
	if *out == "" {
		fmt.Fprintln(stderr, "cellcast backup: --out DIR is required")
		return 2
	}
	if _, err := os.Stat(*out); err == nil {
		fmt.Fprintf(stderr, "cellcast backup: %s exists: give a directory that does not\n", *out)
		return 2
	}
	files, bytes, err := fetchBackup(ctx, *admin, *token, *out)
	if err != nil {
		return fail(stderr, "backup", err)
	}
	fmt.Fprintf(stdout, "backup of %s in %s: %d files, %d bytes; restore with: broker --data %s\n", *admin, *out, files, bytes, *out)
	return 0
}

// fetchBackup unpacks the tar of admin's /admin/backup into a temporary
// directory beside dir and renames it to dir once complete, so a failure
// leaves nothing that looks like a data directory.
func fetchBackup(ctx context.Context, admin, token, dir string) (files int, size int64, err error) {
	resp, err := callAdmin(ctx, http.MethodGet, admin, "/admin/backup", token)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dir)), "."+filepath.Base(dir)+".partial-")
	if err != nil {
		return 0, 0, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if files, size, err = untar(resp.Body, tmp); err != nil {
		return files, size, fmt.Errorf("unpacking the backup: %w", err)
	}
	if files == 0 {
		return 0, 0, errors.New("the broker sent an empty backup")
	}
	return files, size, os.Rename(tmp, dir)
}

// untar writes a tar's directories and regular files under dir, refusing
// any entry whose path would leave it.
func untar(r io.Reader, dir string) (files int, size int64, err error) {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, size, nil
		}
		if err != nil {
			return files, size, err
		}
		name := filepath.FromSlash(h.Name)
		if !filepath.IsLocal(name) {
			return files, size, fmt.Errorf("entry %q is not a path inside the backup", h.Name)
		}
		p := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				return files, size, err
			}
			continue
		case tar.TypeReg:
		default:
			return files, size, fmt.Errorf("entry %q is neither a file nor a directory", h.Name)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return files, size, err
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return files, size, err
		}
		n, err := io.Copy(f, tr)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return files, size, err
		}
		files++
		size += n
	}
}
