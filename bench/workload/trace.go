package workload

// A trace file is UTF-8 text, one record per line, fields separated by a
// tab:
//
//	cellcast-trace 1
//	# a comment (the generator writes its config here)
//	S  at  uid  cell  lat  lng  radius_m  self_join  past  future
//	P  at  uid  cell  lat  lng  radius_m  self_join  expires  desc
//
// at, past, future and expires are nanoseconds (integers); cell is a Dewey
// id such as 1.4.2; lat, lng and radius_m are decimal degrees and metres
// (radius_m 0: no circle); self_join is 0 or 1; desc runs to the end of
// the line and holds no tab or newline. Offsets never decrease. The first
// line names the format and its version; blank lines and lines starting
// with # are skipped.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/seed84792017/cellcast/dewey"
)

const traceMagic = "cellcast-trace 1"

// ErrTrace wraps every error reading a trace.
var ErrTrace = errors.New("workload: bad trace")

// A TraceError is a malformed trace line.
type TraceError struct {
	Line int
	Msg  string
}

func (e *TraceError) Error() string { return fmt.Sprintf("workload: trace line %d: %s", e.Line, e.Msg) }
func (e *TraceError) Unwrap() error { return ErrTrace }

// TraceWriter writes operations to a trace.
type TraceWriter struct {
	w    *bufio.Writer
	buf  []byte
	last time.Duration
}

// NewTraceWriter writes the header, with comment (a line or more; may be
// empty) after it.
func NewTraceWriter(w io.Writer, comment string) *TraceWriter {
	t := &TraceWriter{w: bufio.NewWriterSize(w, 64<<10)}
	t.w.WriteString(traceMagic + "\n")
	for line := range strings.Lines(comment) {
		t.w.WriteString("# " + strings.TrimRight(line, "\r\n") + "\n")
	}
	return t
}

// Write appends op. Offsets must not decrease, and a description must not
// hold a tab or a line break.
func (t *TraceWriter) Write(op *Op) error {
	if op.At < t.last {
		return fmt.Errorf("%w: offset %v after %v", ErrTrace, op.At, t.last)
	}
	if strings.ContainsAny(op.Desc, "\t\r\n") || strings.ContainsAny(op.Uid, "\t\r\n") || op.Uid == "" {
		return fmt.Errorf("%w: uid or description with a tab or line break, or no uid", ErrTrace)
	}
	if op.Kind != Subscribe && op.Kind != Publish {
		return fmt.Errorf("%w: kind %q", ErrTrace, op.Kind)
	}
	if len(op.Cell) == 0 {
		return fmt.Errorf("%w: no cell", ErrTrace)
	}
	t.last = op.At
	b := append(t.buf[:0], byte(op.Kind), '\t')
	b = strconv.AppendInt(b, int64(op.At), 10)
	b = append(append(append(b, '\t'), op.Uid...), '\t')
	b = append(b, op.Cell.String()...)
	for _, f := range []float64{op.Lat, op.Lng, op.RadiusM} {
		b = strconv.AppendFloat(append(b, '\t'), f, 'f', -1, 64)
	}
	b = append(b, '\t', '0')
	if op.SelfJoin {
		b[len(b)-1] = '1'
	}
	if op.Kind == Subscribe {
		b = strconv.AppendInt(append(b, '\t'), int64(op.Past), 10)
		b = strconv.AppendInt(append(b, '\t'), int64(op.Future), 10)
	} else {
		b = strconv.AppendInt(append(b, '\t'), int64(op.Expires), 10)
		b = append(append(b, '\t'), op.Desc...)
	}
	t.buf = append(b, '\n')
	_, err := t.w.Write(t.buf)
	return err
}

// Flush writes what is buffered.
func (t *TraceWriter) Flush() error { return t.w.Flush() }

// TraceReader reads a trace.
type TraceReader struct {
	s    *bufio.Scanner
	line int
	last time.Duration
	err  error
}

// NewTraceReader checks the header and returns a reader of the records.
func NewTraceReader(r io.Reader) (*TraceReader, error) {
	t := &TraceReader{s: bufio.NewScanner(r)}
	t.s.Buffer(make([]byte, 64<<10), 1<<20)
	if !t.s.Scan() {
		if err := t.s.Err(); err != nil {
			return nil, err
		}
		return nil, &TraceError{1, "empty file"}
	}
	t.line = 1
	if h := strings.TrimSuffix(t.s.Text(), "\r"); h != traceMagic {
		return nil, &TraceError{1, fmt.Sprintf("header %.40q, want %q", h, traceMagic)}
	}
	return t, nil
}

// Next returns the next operation; false at the end or on an error, which
// Err then returns.
func (t *TraceReader) Next() (Op, bool) {
	for t.err == nil && t.s.Scan() {
		t.line++
		line := strings.TrimSuffix(t.s.Text(), "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		op, msg := parseOp(line)
		if msg == "" && op.At < t.last {
			msg = fmt.Sprintf("offset %d before the previous %d", op.At, t.last)
		}
		if msg != "" {
			t.err = &TraceError{t.line, msg}
			return Op{}, false
		}
		t.last = op.At
		return op, true
	}
	if t.err == nil {
		t.err = t.s.Err()
	}
	return Op{}, false
}

// Err is the error that ended Next, nil at a clean end.
func (t *TraceReader) Err() error { return t.err }

// parseOp parses a record, returning a message saying what is wrong.
func parseOp(line string) (Op, string) {
	f := strings.SplitN(line, "\t", 10)
	var op Op
	if len(f) != 10 {
		return op, fmt.Sprintf("%d fields, want 10", len(f))
	}
	if f[0] != string(Subscribe) && f[0] != string(Publish) {
		return op, fmt.Sprintf("kind %q (want S or P)", f[0])
	}
	op.Kind = Kind(f[0][0])
	var err error
	ints := func(s, name string) time.Duration {
		if err != nil {
			return 0
		}
		var v int64
		if v, err = strconv.ParseInt(s, 10, 64); err == nil && v < 0 {
			err = fmt.Errorf("negative %s", name)
		} else if err != nil {
			err = fmt.Errorf("%s: not an integer", name)
		}
		return time.Duration(v)
	}
	floats := func(s, name string) float64 {
		if err != nil {
			return 0
		}
		var v float64
		if v, err = strconv.ParseFloat(s, 64); err != nil || v != v || v > 1e300 || v < -1e300 {
			err = fmt.Errorf("%s: not a finite number", name)
		}
		return v
	}
	op.At = ints(f[1], "offset")
	op.Uid = f[2]
	if op.Uid == "" {
		return op, "empty uid"
	}
	// A line's own "\r\n" ending is trimmed before; one inside a field
	// is a line break the writer refuses.
	if strings.Contains(op.Uid, "\r") {
		return op, "a carriage return in the uid"
	}
	var cerr error
	if op.Cell, cerr = dewey.Parse(f[3]); cerr != nil {
		return op, "cell: " + cerr.Error()
	}
	op.Lat, op.Lng, op.RadiusM = floats(f[4], "lat"), floats(f[5], "lng"), floats(f[6], "radius_m")
	if err == nil && op.RadiusM < 0 {
		err = errors.New("negative radius_m")
	}
	switch f[7] {
	case "0":
	case "1":
		op.SelfJoin = true
	default:
		return op, "self_join must be 0 or 1"
	}
	if op.Kind == Subscribe {
		op.Past, op.Future = ints(f[8], "past"), ints(f[9], "future")
	} else {
		op.Expires, op.Desc = ints(f[8], "expires"), f[9]
		if strings.Contains(op.Desc, "\t") {
			return op, "a tab in the description"
		}
		if strings.Contains(op.Desc, "\r") {
			return op, "a carriage return in the description"
		}
	}
	if err != nil {
		return op, err.Error()
	}
	return op, ""
}
