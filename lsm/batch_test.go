package lsm

import (
	"bytes"
	"fmt"
	"testing"
)

func TestBatchRoundTrip(t *testing.T) {
	b := NewBatch()
	b.Set([]byte("a"), []byte("1"))
	b.Merge([]byte("b"), []byte("22"))
	b.Delete([]byte("c"))
	b.setSeq(77)
	r, err := newBatchReader(b.data)
	if err != nil || r.seq != 77 || r.count != 3 {
		t.Fatalf("header seq %d count %d err %v", r.seq, r.count, err)
	}
	var got []string
	for {
		kind, k, v, ok, err := r.next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, fmt.Sprintf("%s:%s=%s", kind, k, v))
	}
	if fmt.Sprint(got) != "[SET:a=1 MERGE:b=22 DEL:c=]" {
		t.Fatalf("got %v", got)
	}
	b.Reset()
	if !b.Empty() || b.Size() != 0 {
		t.Fatal("reset batch not empty")
	}
}

func FuzzBatch(f *testing.F) {
	b := NewBatch()
	b.Set([]byte("key"), []byte("value"))
	b.Merge([]byte("k2"), bytes.Repeat([]byte("x"), 300))
	b.Delete([]byte("k3"))
	f.Add(b.data)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := newBatchReader(data)
		if err != nil {
			return
		}
		for i := 0; ; i++ {
			_, k, v, ok, err := r.next()
			if err != nil || !ok {
				return
			}
			if len(k)+len(v) > len(data) {
				t.Fatal("entry larger than the batch")
			}
		}
	})
}
