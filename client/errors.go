package client

import (
	"errors"
	"time"
)

// Error is an error reply of the broker. Code is one of the protocol's
// stable codes (docs/protocol.md, "Errors").
type Error struct {
	Code    string
	Message string
	// RetryAfter is the broker's hint on an overloaded reply: when a retry
	// may succeed.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return "cellcast: " + e.Code + ": " + e.Message }

// Is matches an Error against a sentinel of the same code, so that
// errors.Is(err, ErrOverloaded) holds for every overloaded reply.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Sentinels, one per protocol code, for errors.Is.
var (
	ErrBadRequest   = &Error{Code: "bad_request"}
	ErrUnknownOp    = &Error{Code: "unknown_op"}
	ErrUnauthorized = &Error{Code: "unauthorized"}
	ErrForbidden    = &Error{Code: "forbidden"}
	ErrNotFound     = &Error{Code: "not_found"}
	ErrTooLarge     = &Error{Code: "too_large"}
	ErrTooMany      = &Error{Code: "too_many"}
	ErrOverloaded   = &Error{Code: "overloaded"}
	ErrUnavailable  = &Error{Code: "unavailable"}
	ErrInternal     = &Error{Code: "internal"}
)

var (
	// ErrConnectionLost: the connection dropped before the reply came.
	// The request may or may not have taken effect.
	ErrConnectionLost = errors.New("cellcast: connection lost before the reply")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("cellcast: client closed")
	// ErrProtocol: the broker sent something this client cannot read.
	ErrProtocol = errors.New("cellcast: unexpected frame")
	// ErrBadLocation: a request's Location cannot be sent (a Polygon of
	// something other than a JSON object, a query by place at a cell or a
	// topic). Nothing was sent.
	ErrBadLocation = errors.New("cellcast: bad location")
)

// Why a subscription ended, from Subscription.Err.
var (
	// ErrWindowOver: the future window ended (or there was none).
	ErrWindowOver = errors.New("cellcast: subscription window over")
	// ErrCancelled: the subscription was unsubscribed.
	ErrCancelled = errors.New("cellcast: subscription cancelled")
	// ErrMoved: the subscription was resumed on another connection.
	ErrMoved = errors.New("cellcast: subscription resumed elsewhere")
	// ErrLost: the broker no longer knew the subscription when the client
	// resumed it, or the window ended while the client was disconnected;
	// notifications may be missing.
	ErrLost = errors.New("cellcast: subscription lost")
)
