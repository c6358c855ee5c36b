package protocol

// Field names of frames that both sides spell outside struct tags: in
// the renderings the client reads by hand (frames.go), the lists spliced
// into paged replies, and the error and ended frames.
const (
	FieldID          = "id" // a request's, echoed by its reply
	FieldOp          = "op"
	FieldSid         = "sid"
	FieldSeq         = "seq"
	FieldPrev        = "prev" // on NATS: the seq sent before this one
	FieldPublication = "publication"
	FieldTo          = "to" // a grouped notification's recipients
	// Lists of publications: a reply's results (subscribed, results,
	// page), a self-join publish's recent.
	FieldResults = "results"
	FieldRecent  = "recent"
	// Paged replies (docs/protocol.md, "Paged results").
	FieldMore   = "more"
	FieldPages  = "pages"
	FieldNext   = "next" // the cursor of the next page
	FieldOf     = "of"   // the op of the reply a page continues
	FieldPage   = "page"
	FieldCursor = "cursor" // a page request's
	FieldPaging = "paging" // a request's choice: PagingPush or PagingCursor
	// Error replies (Error).
	FieldCode         = "code"
	FieldMessage      = "message"
	FieldLimit        = "limit"
	FieldRetryAfterMs = "retry_after_ms"
	// Ended frames (EndReasons).
	FieldReason = "reason"
	FieldLast   = "last"
)

// A request's paging: how the pages of a paged reply after the first
// arrive.
const (
	PagingPush   = "push"   // sent at once, after the reply (WebSocket, NATS)
	PagingCursor = "cursor" // pulled one by one with the page op
)

// A publication's fields, as notifications, past results and query
// results carry it.
const (
	FieldPid       = "pid"
	FieldUid       = "uid"
	FieldCell      = "cell"
	FieldTopic     = "topic"
	FieldTp        = "tp"
	FieldExpiresAt = "expires_at"
	FieldDesc      = "desc"
	FieldAttrs     = "attrs"
	FieldLat       = "lat"
	FieldLng       = "lng"
	FieldRadiusM   = "radius_m"
	FieldPolygon   = "polygon"
)

// PublicationFields returns a publication's fields in the order the
// broker renders them, which the client's decoder expects first.
func PublicationFields() []string {
	return []string{FieldPid, FieldUid, FieldCell, FieldTopic, FieldTp, FieldExpiresAt, FieldDesc, FieldAttrs,
		FieldLat, FieldLng, FieldRadiusM, FieldPolygon}
}
