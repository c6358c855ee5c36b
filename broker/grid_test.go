package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A data directory of the quad tree's days is refused with a clear
// error; a new one is marked, and opens again.
func TestGridMarksTheDataDir(t *testing.T) {
	dir := t.TempDir()
	b := start(t, Config{DataDir: dir})
	if err := b.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, gridFile)); err != nil || strings.TrimSpace(string(got)) != gridName {
		t.Fatalf("mark %q, %v", got, err)
	}
	start(t, Config{DataDir: dir}).Shutdown(t.Context())

	old := t.TempDir()
	if err := os.WriteFile(filepath.Join(old, "CURRENT"), []byte("MANIFEST-000002\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := checkGrid(old); err == nil || !strings.Contains(err.Error(), "before cells were the world grid") {
		t.Fatalf("an unmarked store: %v", err)
	}
	os.WriteFile(filepath.Join(old, gridFile), []byte("quad\n"), 0o644)
	if err := checkGrid(old); err == nil || !strings.Contains(err.Error(), `"quad"`) {
		t.Fatalf("another grid: %v", err)
	}
}
