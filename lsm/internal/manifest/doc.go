// Package manifest describes the engine's shape on disk: which table files
// exist at which level (a Version) and the edits that move from one Version to
// the next (VersionEdit), encoded as records of the MANIFEST log.
//
// Invariants a Version enforces: L0 files may overlap and are ordered oldest
// to newest by sequence number, and are also kept as sublevels (sorted runs
// of disjoint files, a key's newer versions in higher sublevels); files of L1
// and deeper are sorted by key and never overlap within their level.
package manifest
