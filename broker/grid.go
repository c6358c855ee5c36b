package broker

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// gridFile marks a data directory whose cells are the world grid's. The
// versions before it indexed a quad tree over New York State: the same
// Dewey ids named other places, so their records would match the wrong
// subscribers. Every record expires (within --max-expiry), so such a
// directory is better started afresh than converted.
const (
	gridFile = "GRID"
	gridName = "s2"
)

// checkGrid refuses a data directory written on another grid, and marks a
// new one as the world grid's.
func checkGrid(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, gridFile))
	switch {
	case err == nil && strings.TrimSpace(string(b)) == gridName:
		return nil
	case err == nil:
		return fmt.Errorf("%s says its cells are on the %q grid, not the world grid (%s)", filepath.Join(dir, gridFile), strings.TrimSpace(string(b)), gridName)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "CURRENT")); err == nil {
		return fmt.Errorf("%s holds a store written before cells were the world grid's (a quad tree over New York State named other places by the same ids): start with another --data directory; its records expire within --max-expiry anyway", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, gridFile), []byte(gridName+"\n"), 0o644)
}
