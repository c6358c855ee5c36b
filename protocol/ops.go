package protocol

// Request ops: a request's op field, and the NATS request subject
// cellcast.<op> (RequestSubject).
const (
	OpSubscribe   = "subscribe"
	OpPublish     = "publish"
	OpUnsubscribe = "unsubscribe"
	OpResume      = "resume"
	OpQuery       = "query"
	// OpPage asks for the next page of a paged reply by its cursor; the
	// pages after a reply's first are replies of this op too.
	OpPage = "page"
)

// Reply ops: the op field of what the broker sends.
const (
	OpSubscribed   = "subscribed"   // to subscribe
	OpPublished    = "published"    // to publish
	OpUnsubscribed = "unsubscribed" // to unsubscribe
	OpResumed      = "resumed"      // to resume; the replayed notifications follow
	OpResults      = "results"      // to query
	OpError        = "error"        // to any request refused (Error)
	// OpNotification is a publication for one subscription.
	OpNotification = "notification"
	// OpNotifications is a publication for several subscriptions of the
	// connection, to a WebSocket that asked for them grouped
	// (ParamNotifications).
	OpNotifications = "notifications"
	// OpEnded says a subscription stopped reaching the connection, and
	// why (EndReasons).
	OpEnded = "ended"
)

// RequestOps returns every request op.
func RequestOps() []string {
	return []string{OpSubscribe, OpPublish, OpUnsubscribe, OpResume, OpQuery, OpPage}
}

// ReplyOps returns every op the broker sends, OpPage included.
func ReplyOps() []string {
	return []string{OpSubscribed, OpPublished, OpUnsubscribed, OpResumed, OpResults, OpPage,
		OpError, OpNotification, OpNotifications, OpEnded}
}
