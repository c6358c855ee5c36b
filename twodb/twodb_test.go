package twodb

import (
	"testing"

	"github.com/seed84792017/cellcast/listdb/storetest"
)

func TestDifferential(t *testing.T)      { storetest.Differential(t, Open) }
func TestExpiredDataIsGone(t *testing.T) { storetest.ExpiredDataIsGone(t, Open) }

func TestBadInput(t *testing.T) { storetest.BadInput(t, Open) }
