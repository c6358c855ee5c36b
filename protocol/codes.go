package protocol

// Error codes: an error reply's code field (Error). A refused request
// stored nothing; only internal leaves that unknown.
const (
	// CodeBadRequest: the request cannot run as sent: unreadable JSON or
	// CBOR, an unknown field, a wrong type, a missing or invalid value
	// (a location, a window, an expiry, a query, a cover), or a query
	// that names an attribute the broker does not index.
	CodeBadRequest = "bad_request"
	// CodeUnauthorized: the token is missing, invalid, expired or revoked.
	CodeUnauthorized = "unauthorized"
	// CodeForbidden: acting as another uid, or touching another user's
	// subscription or page cursor.
	CodeForbidden = "forbidden"
	// CodeNotFound: the broker knows no subscription of that sid (resume
	// knows one a few seconds past its window), or the page cursor is
	// unknown, expired or released.
	CodeNotFound = "not_found"
	// CodeOverloaded: not run, retry later (Error.RetryAfter): either a
	// rate over its limit, named by Error.Limit (LimitConnRate,
	// LimitUserRate, LimitUserNewTopics), or a publish while delivery is
	// behind (too many notifications owed, or subscribers behind
	// together), with no Limit.
	CodeOverloaded = "overloaded"
	// CodeTooLarge: a frame or an HTTP body over the broker's size limit.
	CodeTooLarge = "too_large"
	// CodeTooMany: a count at its limit, named by Error.Limit: live
	// subscriptions of a connection or of a user, a user's connections,
	// the topics in the registry, or more new topics in one request than
	// a user may make in a minute.
	CodeTooMany = "too_many"
	// CodeUnavailable: not run, retry: the broker is shutting down, or in
	// a cluster the shard cannot take the request now (changing owners,
	// too busy, rebuilding its catalog).
	CodeUnavailable = "unavailable"
	// CodeInternal: a storage failure, which the broker logs. Whether a
	// write was stored is unknown; retrying may help.
	CodeInternal = "internal"
	// CodeUnknownOp: the op is none of RequestOps.
	CodeUnknownOp = "unknown_op"
)

// Codes returns every error code.
func Codes() []string {
	return []string{CodeBadRequest, CodeUnauthorized, CodeForbidden, CodeNotFound, CodeOverloaded,
		CodeTooLarge, CodeTooMany, CodeUnavailable, CodeInternal, CodeUnknownOp}
}

// The limits an overloaded or too_many error names in its limit field
// (Error.Limit), with the code it comes with.
const (
	LimitConnRate          = "connection_rate"          // requests per second of a connection: overloaded
	LimitUserRate          = "user_rate"                // requests per second of a user, over every transport: overloaded
	LimitConnSubscriptions = "connection_subscriptions" // live subscriptions of a connection: too_many
	LimitUserSubscriptions = "user_subscriptions"       // live subscriptions of a user: too_many
	LimitUserConnections   = "user_connections"         // connections of a user: too_many
	// LimitUserNewTopics: new topics a user makes per minute: overloaded,
	// or too_many for more in one request than a minute allows.
	LimitUserNewTopics = "user_new_topics"
	LimitTopics        = "topics" // topics in the registry: too_many
)

// Limits returns every limit an error may name.
func Limits() []string {
	return []string{LimitConnRate, LimitUserRate, LimitConnSubscriptions, LimitUserSubscriptions,
		LimitUserConnections, LimitUserNewTopics, LimitTopics}
}
