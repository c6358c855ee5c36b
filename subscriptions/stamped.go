package subscriptions

// Stamped is a hook a request carries (SubscribeRequest.Stamped,
// PublishRequest.Stamped, Store.Unsubscribe's argument): a Store that
// supports it calls it once the operation has taken its stamp and its
// write (if any) is visible to later operations, before it waits for that
// write to be durable. A client connection uses it to start its next
// request while this one waits for the disk, keeping its requests in
// stamp order. It may run more than once: its maker makes it idempotent.
// Nil: nobody listens.
type Stamped func()

// Mark runs the hook, if there is one.
func (f Stamped) Mark() {
	if f != nil {
		f()
	}
}
