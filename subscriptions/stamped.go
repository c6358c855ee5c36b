package subscriptions

import "context"

type stampedKey struct{}

// WithStamped returns a context carrying fn, which a Store that supports
// it calls once an operation has taken its stamp and its write (if any)
// is visible to later operations, before it waits for that write to be
// durable. A client connection uses it to start its next request while
// this one waits for the disk, keeping its requests in stamp order.
func WithStamped(ctx context.Context, fn func()) context.Context {
	return context.WithValue(ctx, stampedKey{}, fn)
}

// Stamped runs the function WithStamped put in ctx, if any. It may run
// more than once; the caller of WithStamped makes it idempotent.
func Stamped(ctx context.Context) {
	if fn, ok := ctx.Value(stampedKey{}).(func()); ok {
		fn()
	}
}
