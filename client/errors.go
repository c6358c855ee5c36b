package client

import (
	"errors"

	"github.com/seed84792017/cellcast/protocol"
)

// Error is an error reply of the broker: Code is one of the protocol's
// stable codes (protocol.Codes, docs/protocol.md "Errors"), RetryAfter
// the broker's hint on overloaded, Limit the limit an overloaded or
// too_many reply names. errors.Is matches it against the sentinel of its
// code, such as ErrOverloaded.
type Error = protocol.Error

// Sentinels, one per protocol code, for errors.Is.
var (
	ErrBadRequest   = &Error{Code: protocol.CodeBadRequest}
	ErrUnknownOp    = &Error{Code: protocol.CodeUnknownOp}
	ErrUnauthorized = &Error{Code: protocol.CodeUnauthorized}
	ErrForbidden    = &Error{Code: protocol.CodeForbidden}
	ErrNotFound     = &Error{Code: protocol.CodeNotFound}
	ErrTooLarge     = &Error{Code: protocol.CodeTooLarge}
	ErrTooMany      = &Error{Code: protocol.CodeTooMany}
	ErrOverloaded   = &Error{Code: protocol.CodeOverloaded}
	ErrUnavailable  = &Error{Code: protocol.CodeUnavailable}
	ErrInternal     = &Error{Code: protocol.CodeInternal}
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
	// ErrInvalidRequest: a request the client refuses before sending it,
	// such as a negative Past, Future or Expires (which the broker would
	// refuse too) or a query range with one bound. Nothing was sent.
	ErrInvalidRequest = errors.New("cellcast: invalid request")
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
