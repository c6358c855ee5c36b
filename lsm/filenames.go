package lsm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/seed84792017/cellcast/lsm/vfs"
)

type fileType int

const (
	fileTypeUnknown fileType = iota
	fileTypeLog
	fileTypeTable
	fileTypeManifest
	fileTypeCurrent
	fileTypeLock
	fileTypeTemp
	fileTypeOptions
)

func makeFilename(fs vfs.FS, dir string, t fileType, num uint64) string {
	switch t {
	case fileTypeLog:
		return vfs.Join(dir, fmt.Sprintf("%06d.log", num))
	case fileTypeTable:
		return vfs.Join(dir, fmt.Sprintf("%06d.sst", num))
	case fileTypeManifest:
		return vfs.Join(dir, fmt.Sprintf("MANIFEST-%06d", num))
	case fileTypeCurrent:
		return vfs.Join(dir, "CURRENT")
	case fileTypeLock:
		return vfs.Join(dir, "LOCK")
	case fileTypeTemp:
		return vfs.Join(dir, fmt.Sprintf("%06d.tmp", num))
	case fileTypeOptions:
		return vfs.Join(dir, "OPTIONS")
	}
	panic("unreachable")
}

func parseFilename(name string) (fileType, uint64, bool) {
	switch {
	case name == "CURRENT":
		return fileTypeCurrent, 0, true
	case name == "LOCK":
		return fileTypeLock, 0, true
	case name == "OPTIONS":
		return fileTypeOptions, 0, true
	case strings.HasPrefix(name, "MANIFEST-"):
		n, err := strconv.ParseUint(name[len("MANIFEST-"):], 10, 64)
		return fileTypeManifest, n, err == nil
	}
	dot := strings.IndexByte(name, '.')
	if dot <= 0 {
		return fileTypeUnknown, 0, false
	}
	n, err := strconv.ParseUint(name[:dot], 10, 64)
	if err != nil {
		return fileTypeUnknown, 0, false
	}
	switch name[dot:] {
	case ".log":
		return fileTypeLog, n, true
	case ".sst":
		return fileTypeTable, n, true
	case ".tmp":
		return fileTypeTemp, n, true
	}
	return fileTypeUnknown, 0, false
}
