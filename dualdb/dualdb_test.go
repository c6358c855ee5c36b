package dualdb

import (
	"testing"

	"github.com/seed84792017/cellcast/listdb/storetest"
)

func TestDifferential(t *testing.T)      { storetest.Differential(t, Open) }
func TestExpiredDataIsGone(t *testing.T) { storetest.ExpiredDataIsGone(t, Open) }

func TestClockFloor(t *testing.T)                 { storetest.ClockFloor(t, Open) }
func TestResumeGrace(t *testing.T)                { storetest.ResumeGrace(t, Open) }
func TestBadInput(t *testing.T)                   { storetest.BadInput(t, Open) }
func TestConcurrent(t *testing.T)                 { storetest.Concurrent(t, Open) }
func TestDurability(t *testing.T)                 { storetest.Durability(t, Open) }
func TestReadersWaitForWhatTheyRead(t *testing.T) { storetest.ReadersWaitForWhatTheyRead(t, Open) }
func TestCovers(t *testing.T)                     { storetest.Covers(t, Open) }
func TestCoverValidation(t *testing.T) {
	storetest.CoverValidation(t, Open)
}

func BenchmarkSubHeavy(b *testing.B) { storetest.Bench(b, Open, storetest.Workload{SubsPerPub: 3}) }
func BenchmarkPubHeavy(b *testing.B) {
	storetest.Bench(b, Open, storetest.Workload{SubsPerPub: 1.0 / 3})
}
func BenchmarkSubHeavySelfJoin(b *testing.B) {
	storetest.Bench(b, Open, storetest.Workload{SubsPerPub: 3, SelfJoin: true})
}
func BenchmarkPubHeavySelfJoin(b *testing.B) {
	storetest.Bench(b, Open, storetest.Workload{SubsPerPub: 1.0 / 3, SelfJoin: true})
}

// go test ./dualdb -run TestRSS -store.rss=10000000 -timeout 60m
func TestRSS(t *testing.T) { storetest.RSS(t, Open) }

func TestScanPublications(t *testing.T) { storetest.ScanPublications(t, Open) }
func TestShallowestMark(t *testing.T)   { storetest.ShallowestMark(t, Open) }
