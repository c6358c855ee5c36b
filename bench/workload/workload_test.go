package workload

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/geo"
)

func gen(t *testing.T, cfg Config) []Op {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g.All()
}

func TestDeterministic(t *testing.T) {
	cfg := Config{Seed: 7, Ops: 2000, Users: 300, Space: Quad}
	a, b := gen(t, cfg), gen(t, cfg)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same config gave different operations")
	}
	cfg.Seed = 8
	if reflect.DeepEqual(a, gen(t, cfg)) {
		t.Fatal("another seed gave the same operations")
	}
}

func TestMixWindowsAndOffsets(t *testing.T) {
	for _, ratio := range []float64{3, 1, 1.0 / 3} {
		ops := gen(t, Config{Seed: 1, Ops: 20000, Users: 1000, SubsPerPub: ratio, SelfJoin: 0.25, Rate: 1000})
		subs, self := 0, 0
		for i, op := range ops {
			if want := time.Duration(i) * time.Millisecond; op.At != want {
				t.Fatalf("op %d at %v, want %v at 1,000 ops/s", i, op.At, want)
			}
			if op.SelfJoin {
				self++
			}
			switch op.Kind {
			case Subscribe:
				subs++
				if op.Past != 10*time.Second || op.Future != 10*time.Second {
					t.Fatalf("windows %v, %v", op.Past, op.Future)
				}
			case Publish:
				if op.Expires != 20*time.Second || !strings.Contains(op.Desc, " near ") {
					t.Fatalf("publication %+v", op)
				}
			}
		}
		want := ratio / (1 + ratio)
		if got := float64(subs) / float64(len(ops)); math.Abs(got-want) > 0.02 {
			t.Errorf("ratio %.2f: %.3f subscriptions, want %.3f", ratio, got, want)
		}
		if got := float64(self) / float64(len(ops)); math.Abs(got-0.25) > 0.02 {
			t.Errorf("%.3f self-joins, want 0.25", got)
		}
	}
}

// TestUsersMove: a user's next subscription is in another cell.
func TestUsersMove(t *testing.T) {
	ops := gen(t, Config{Seed: 3, Ops: 20000, Users: 500, SubsPerPub: 3})
	last := map[string]string{}
	moved, again := 0, 0
	for _, op := range ops {
		if op.Kind != Subscribe {
			continue
		}
		c := op.Cell.String()
		if prev, ok := last[op.Uid]; ok {
			if prev == c {
				again++
			} else {
				moved++
			}
		}
		last[op.Uid] = c
	}
	if moved == 0 || float64(again) > 0.01*float64(moved+again) {
		t.Fatalf("%d moves, %d subscriptions in the cell already subscribed", moved, again)
	}
}

// TestQuadLevels: level i of d is drawn with probability ∝ 1/2^(d−i).
func TestQuadLevels(t *testing.T) {
	const d = 5
	ops := gen(t, Config{Seed: 4, Ops: 40000, Space: Quad, Depth: d})
	count := make([]int, d+1)
	for _, op := range ops {
		count[len(op.Cell)]++
	}
	for i := 1; i <= d; i++ {
		want := math.Pow(2, float64(i-d)) / (2 - math.Pow(2, 1-d))
		if got := float64(count[i]) / float64(len(ops)); math.Abs(got-want) > 0.015 {
			t.Errorf("level %d: %.3f of operations, want %.3f", i, got, want)
		}
	}
	for _, op := range gen(t, Config{Seed: 4, Ops: 500, Space: Quad, Depth: d, Level: 3}) {
		if len(op.Cell) != 3 {
			t.Fatalf("cell %v with the level fixed at 3", op.Cell)
		}
	}
	// From a minimum level on, the levels keep their proportions.
	const lo = 3
	ops = gen(t, Config{Seed: 4, Ops: 40000, Space: Quad, Depth: d, MinLevel: lo})
	clear(count)
	for _, op := range ops {
		count[len(op.Cell)]++
	}
	total := 0.0
	for i := lo; i <= d; i++ {
		total += math.Pow(2, float64(i-d))
	}
	for i := 1; i <= d; i++ {
		want := 0.0
		if i >= lo {
			want = math.Pow(2, float64(i-d)) / total
		}
		if got := float64(count[i]) / float64(len(ops)); math.Abs(got-want) > 0.015 || (want == 0 && got > 0) {
			t.Errorf("minimum level %d, level %d: %.3f of operations, want %.3f", lo, i, got, want)
		}
	}
}

// TestS2: cells are the world grid's cells of the user's point, at
// levels from MinLevel to Level drawn ∝ 1/2^(Level−i); users stay in New
// York and a user's next subscription is in another finest cell.
func TestS2(t *testing.T) {
	const lo, hi = 10, 16
	ops := gen(t, Config{Seed: 9, Ops: 40000, Users: 2000, SubsPerPub: 3, Space: S2})
	count := make([]int, geo.MaxLevel+1)
	last := map[string]string{}
	moved, stayed := 0, 0
	for _, op := range ops {
		level := len(op.Cell) - 1
		if !geo.IsCell(op.Cell) || level < lo || level > hi {
			t.Fatalf("cell %v: not a grid cell of level %d…%d", op.Cell, lo, hi)
		}
		if want, _ := geo.PointCell(op.Lat, op.Lng, level); !reflect.DeepEqual(op.Cell, want) {
			t.Fatalf("(%g, %g) at level %d in %v, want %v", op.Lat, op.Lng, level, op.Cell, want)
		}
		if !NewYork.Contains(op.Lat, op.Lng) {
			t.Fatalf("(%g, %g) outside New York", op.Lat, op.Lng)
		}
		count[level]++
		if op.Kind != Subscribe {
			continue
		}
		leaf, _ := geo.PointCell(op.Lat, op.Lng, hi)
		if prev, ok := last[op.Uid]; ok {
			if prev == leaf.String() {
				stayed++
			} else {
				moved++
			}
		}
		last[op.Uid] = leaf.String()
	}
	total := 2 - math.Pow(2, lo-hi)
	for i := lo; i <= hi; i++ {
		want := math.Pow(2, float64(i-hi)) / total
		if got := float64(count[i]) / float64(len(ops)); math.Abs(got-want) > 0.015 {
			t.Errorf("level %d: %.3f of operations, want %.3f", i, got, want)
		}
	}
	if moved == 0 || float64(stayed) > 0.01*float64(moved+stayed) {
		t.Fatalf("%d moves, %d subscriptions in the finest cell already subscribed", moved, stayed)
	}
	// The levels set by hand, down to one level; the same seed gives the
	// same operations, another seed others.
	for _, op := range gen(t, Config{Seed: 9, Ops: 300, Space: S2, MinLevel: 9, Level: 9}) {
		if len(op.Cell) != 10 {
			t.Fatalf("cell %v with the level fixed at 9 (10 components)", op.Cell)
		}
	}
	cfg := Config{Seed: 9, Ops: 2000, Users: 300, Space: S2, SelfJoin: 0.1}
	a := gen(t, cfg)
	if !reflect.DeepEqual(a, gen(t, cfg)) {
		t.Fatal("the same config gave different operations")
	}
	cfg.Seed = 10
	if reflect.DeepEqual(a, gen(t, cfg)) {
		t.Fatal("another seed gave the same operations")
	}
}

func TestCircles(t *testing.T) {
	g, err := New(Config{Seed: 5, Ops: 2000, Space: Circle, Radius: 1000})
	if err != nil {
		t.Fatal(err)
	}
	radii := map[float64]int{}
	for _, op := range g.All() {
		radii[op.RadiusM]++
		want, err := g.Tree().CircleCell(op.Lat, op.Lng, op.RadiusM)
		if err != nil || !reflect.DeepEqual(want, op.Cell) {
			t.Fatalf("circle (%g, %g, %g m) in %v, want %v (%v)", op.Lat, op.Lng, op.RadiusM, op.Cell, want, err)
		}
	}
	for _, r := range []float64{4000, 2000, 1000, 500, 250} {
		if radii[r] < 300 {
			t.Errorf("radius %g m drawn %d times of 2,000", r, radii[r])
		}
	}
	for _, op := range gen(t, Config{Seed: 5, Ops: 200, Space: Circle, Radius: 1000, RadiusTimes: 0.5}) {
		if op.RadiusM != 500 {
			t.Fatalf("radius %g m, want every one 500 m", op.RadiusM)
		}
	}
}

// TestDescriptionsNameTheNearestPlace: an incident in Manhattan is near
// Manhattan, one in Buffalo near Buffalo.
func TestDescriptionsNameTheNearestPlace(t *testing.T) {
	g, err := New(Config{Users: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		lat, lng float64
		want     string
	}{{40.7831, -73.9712, "Manhattan"}, {42.8864, -78.8784, "Buffalo"}, {42.6526, -73.7562, "Albany"}} {
		if got := g.nearest(c.lat, c.lng); got != c.want {
			t.Errorf("(%g, %g) is near %q, want %q", c.lat, c.lng, got, c.want)
		}
	}
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Ops: -1}, {SubsPerPub: -1}, {SelfJoin: 1.5}, {Space: "hex"}, {Depth: 17},
		{Space: Quad, Depth: 4, Level: 5}, {Space: Quad, Depth: 4, MinLevel: 5}, {Space: Grid, MinLevel: 2},
		{Space: Quad, Depth: 4, Level: 1, MinLevel: 2}, {Rate: math.Inf(1)}, {Radius: math.NaN()}, {Past: -time.Second},
		{Space: S2, Level: 31}, {Space: S2, MinLevel: 31}, {Space: S2, Level: 12, MinLevel: 13}, {Space: S2, MinLevel: 17},
		{Space: S2, Level: -1}, {Space: S2, MinLevel: -1},
	} {
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", cfg, err)
		}
	}
}

func TestTraceRoundTrip(t *testing.T) {
	for _, space := range []Space{Grid, Quad, Circle, S2} {
		ops := gen(t, Config{Seed: 6, Ops: 3000, Users: 200, Space: space, SelfJoin: 0.5})
		var buf bytes.Buffer
		w := NewTraceWriter(&buf, "seed 6\nspace "+string(space))
		for i := range ops {
			if err := w.Write(&ops[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		r, err := NewTraceReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		var back []Op
		for op, ok := r.Next(); ok; op, ok = r.Next() {
			back = append(back, op)
		}
		if r.Err() != nil {
			t.Fatal(r.Err())
		}
		if !reflect.DeepEqual(ops, back) {
			t.Fatalf("%s: the trace read back differs", space)
		}
	}
}

func TestBadTraces(t *testing.T) {
	const head = traceMagic + "\n# c\n"
	const good = "S\t5\tu1\t1.2\t41.5\t-74\t0\t0\t10\t10\n"
	for _, c := range []struct {
		name, text string
		line       int
	}{
		{"empty", "", 1},
		{"no header", good, 1},
		{"other version", "cellcast-trace 2\n" + good, 1},
		{"few fields", head + "S\t1\tu1\t1.2\n", 3},
		{"kind", head + "X\t5\tu1\t1.2\t41.5\t-74\t0\t0\t10\t10\n", 3},
		{"no kind", head + "\t5\tu1\t1.2\t41.5\t-74\t0\t0\t10\t10\n", 3},
		{"offset", head + "S\tsoon\tu1\t1.2\t41.5\t-74\t0\t0\t10\t10\n", 3},
		{"negative window", head + "S\t5\tu1\t1.2\t41.5\t-74\t0\t0\t-10\t10\n", 3},
		{"cell", head + "S\t5\tu1\t1.0.2\t41.5\t-74\t0\t0\t10\t10\n", 3},
		{"lat", head + "S\t5\tu1\t1.2\tNaN\t-74\t0\t0\t10\t10\n", 3},
		{"radius", head + "S\t5\tu1\t1.2\t41.5\t-74\t-3\t0\t10\t10\n", 3},
		{"self join", head + "S\t5\tu1\t1.2\t41.5\t-74\t0\tyes\t10\t10\n", 3},
		{"no uid", head + "S\t5\t\t1.2\t41.5\t-74\t0\t0\t10\t10\n", 3},
		{"backwards", head + good + "P\t4\tu1\t1.2\t41.5\t-74\t0\t0\t20\tfire\n", 4},
		{"carriage return in a description", head + "P\t5\tu1\t1.2\t41.5\t-74\t0\t0\t20\tfi\rre\n", 3},
		{"carriage return in a uid", head + "P\t5\tu\r1\t1.2\t41.5\t-74\t0\t0\t20\tfire\n", 3},
	} {
		r, err := NewTraceReader(strings.NewReader(c.text))
		if err == nil {
			for _, ok := r.Next(); ok; _, ok = r.Next() {
			}
			err = r.Err()
		}
		var te *TraceError
		if !errors.As(err, &te) || !errors.Is(err, ErrTrace) || te.Line != c.line {
			t.Errorf("%s: %v, want a TraceError at line %d", c.name, err, c.line)
		}
	}
}

func TestTraceWriterRefuses(t *testing.T) {
	w := NewTraceWriter(&bytes.Buffer{}, "")
	good := Op{Kind: Publish, At: 10, Uid: "u", Cell: []uint32{1}, Desc: "fire"}
	if err := w.Write(&good); err != nil {
		t.Fatal(err)
	}
	for _, op := range []Op{
		{Kind: Publish, At: 5, Uid: "u", Cell: []uint32{1}},
		{Kind: Publish, At: 10, Uid: "u", Cell: []uint32{1}, Desc: "a\tb"},
		{Kind: 'Q', At: 10, Uid: "u", Cell: []uint32{1}},
		{Kind: Publish, At: 10, Uid: "", Cell: []uint32{1}},
		{Kind: Publish, At: 10, Uid: "u"},
	} {
		if err := w.Write(&op); !errors.Is(err, ErrTrace) {
			t.Errorf("%+v: %v", op, err)
		}
	}
}

// FuzzTrace: reading never panics, and what reads writes back to a trace
// that reads the same.
func FuzzTrace(f *testing.F) {
	f.Add(traceMagic + "\nS\t5\tu1\t1.2\t41.5\t-74\t0\t0\t10\t10\nP\t6\tu2\t3\t40\t-73\t250\t1\t20\tfire near Troy\n")
	f.Add(traceMagic + "\n#x\n\nP\t0\tu\t1\t0\t0\t0\t0\t0\t\n")
	f.Add(traceMagic + "\nS\t5\tu1\t4.1.3.3.2.4.1.1.2.3.1.4.4.2.1.3.2\t40.758\t-73.9855\t0\t0\t10\t10\n") // a world-grid cell of level 16
	f.Fuzz(func(t *testing.T, text string) {
		r, err := NewTraceReader(strings.NewReader(text))
		if err != nil {
			return
		}
		var ops []Op
		for op, ok := r.Next(); ok; op, ok = r.Next() {
			ops = append(ops, op)
		}
		var buf bytes.Buffer
		w := NewTraceWriter(&buf, "")
		for i := range ops {
			if err := w.Write(&ops[i]); err != nil {
				t.Fatalf("writing back %+v: %v", ops[i], err)
			}
		}
		w.Flush()
		r2, err := NewTraceReader(&buf)
		if err != nil {
			t.Fatal(err)
		}
		for i := range ops {
			op, ok := r2.Next()
			if !ok || !reflect.DeepEqual(op, ops[i]) {
				t.Fatalf("op %d read back as %+v, want %+v (%v)", i, op, ops[i], r2.Err())
			}
		}
	})
}

// A trace saved with CRLF line endings reads as the same operations.
func TestTraceCRLF(t *testing.T) {
	text := traceMagic + "\n# c\nS\t5\tu1\t1.2\t41.5\t-74\t0\t0\t10\t10\nP\t6\tu2\t3\t40\t-73\t250\t1\t20\tfire near Troy\n"
	read := func(text string) []Op {
		r, err := NewTraceReader(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		var ops []Op
		for op, ok := r.Next(); ok; op, ok = r.Next() {
			ops = append(ops, op)
		}
		if r.Err() != nil {
			t.Fatal(r.Err())
		}
		return ops
	}
	want := read(text)
	if got := read(strings.ReplaceAll(text, "\n", "\r\n")); len(want) != 2 || !reflect.DeepEqual(got, want) {
		t.Fatalf("CRLF read %+v, want %+v", got, want)
	}
}
