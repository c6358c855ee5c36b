package protocol

import "time"

// Error is an error reply: {"op":"error","code":…,"message":…} with
// limit and retry_after_ms when they apply. The gateway answers with it
// and the Go client returns it, so both mean the same by each field.
type Error struct {
	Code    string // one of Codes
	Message string // for people: what was wrong, in the broker's words
	// RetryAfter, on overloaded, hints when a retry may succeed.
	RetryAfter time.Duration
	// Limit, on overloaded and too_many, names the limit hit (Limits),
	// when a limit was.
	Limit string
}

func (e *Error) Error() string { return "cellcast: " + e.Code + ": " + e.Message }

// Is matches an Error against a sentinel of the same code, an Error with
// no message, so that errors.Is(err, &Error{Code: CodeOverloaded}) holds
// for every overloaded reply.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// RetryAfterMs is RetryAfter in the reply's retry_after_ms field: whole
// milliseconds, rounded up so that a client waiting that long does not
// come back early.
func (e *Error) RetryAfterMs() int64 {
	return int64((e.RetryAfter + time.Millisecond - 1) / time.Millisecond)
}

// RetryAfterOf reads a reply's retry_after_ms.
func RetryAfterOf(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }
