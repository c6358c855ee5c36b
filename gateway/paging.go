package gateway

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/seed84792017/cellcast/protocol"
	"github.com/seed84792017/cellcast/subscriptions"
)

// Paged replies (docs/protocol.md, "Paged results"). A reply whose
// publications would make it larger than the reply budget carries the
// first page of them and says more follow. The rest arrive either pushed,
// as page frames right after the reply (WebSocket, NATS), or pulled, one
// page per page request with a cursor (HTTP, or any transport that asks
// for "paging":"cursor"). Every frame, envelope included, is at most the
// budget, unless a single publication is larger: a page holds at least
// one.

// Paging modes a request may ask for.
const (
	pagingPush   = protocol.PagingPush
	pagingCursor = protocol.PagingCursor
)

// natsHeadroom is what a NATS reply budget leaves below the server's max
// payload.
const natsHeadroom = 1 << 10

// maxPageDigits bounds the digits of a page number or a page count, for
// the envelope sizes the splitter counts.
const maxPageDigits = 10

// pageReply is the envelope of the second and later pages.
type pageReply struct {
	ID   json.RawMessage `json:"id,omitempty"`
	Op   string          `json:"op"`   // "page"
	Of   string          `json:"of"`   // the op of the first reply: subscribed, published, results
	Page int             `json:"page"` // 2, 3, …: the first reply is page 1
	More bool            `json:"more"`
	Next string          `json:"next,omitempty"` // the cursor of the next page, in cursor mode
	// Results are spliced in, as for subscribedReply.
}

// splitPages cuts items of the given sizes, in order, into pages: as many
// whole items as fit the budget, counting the page's envelope (first for
// the first page, rest for the others) and the commas between items, and
// at least one item a page. It returns the end index of each page; no
// items make one empty page.
func splitPages(sizes []int, first, rest, budget int) []int {
	var ends []int
	cost, n := first, 0 // bytes and items of the current page
	for i, sz := range sizes {
		add := sz
		if n > 0 {
			add++ // the comma
		}
		if n > 0 && cost+add > budget {
			ends = append(ends, i)
			cost, n, add = rest, 0, sz
		}
		cost += add
		n++
	}
	return append(ends, len(sizes))
}

// render renders publications as clients receive them.
func (g *Gateway) render(ps []subscriptions.Publication) [][]byte {
	return g.loc.EncodePublications(ps)
}

// replyPaged answers req on s with head, an encoded reply object, and the
// rendered publications items under key, in pages if they outgrow the
// budget.
func (g *Gateway) replyPaged(s session, req *Request, head []byte, key string, items [][]byte) {
	sizes := make([]int, len(items))
	for i := range items {
		sizes[i] = len(items[i])
	}
	of := replyOp(head)
	budget := s.replyBudget(g.limits.ReplyBudget)
	first := len(head) + len(`,"more":true,"pages":,"next":"",""":[]`) + maxPageDigits + cursorLen + len(key)
	rest := len(encode(pageReply{ID: req.ID, Op: protocol.OpPage, Of: of, Page: 1e9, More: false, Next: strings.Repeat("x", cursorLen)})) +
		len(`,"results":[]`)
	ends := splitPages(sizes, first, rest, budget)
	if len(ends) == 1 {
		s.replyList(head, key, items)
		return
	}
	pages := make([][][]byte, len(ends))
	for i, start := range ends {
		from := 0
		if i > 0 {
			from = ends[i-1]
		}
		pages[i] = items[from:start]
	}
	if req.Paging != pagingCursor {
		frames := make([][]byte, len(pages))
		frames[0] = withArray(withPaging(head, len(pages), ""), key, pages[0])
		for i := 1; i < len(pages); i++ {
			frames[i] = withArray(encode(pageReply{ID: req.ID, Op: protocol.OpPage, Of: of, Page: i + 1, More: i+1 < len(pages)}), protocol.FieldResults, pages[i])
		}
		if s.replyAll(frames) {
			return
		}
		// The send queue cannot take them all: the client pulls the rest.
	}
	owner, _ := g.actor(s, req, false)
	rendered := make([][]byte, len(pages)-1)
	for i := range rendered {
		rendered[i] = joinJSON(pages[i+1])
	}
	next := g.cursors.put(owner, req.ID, of, rendered)
	s.reply(withArray(withPaging(head, len(pages), next), key, pages[0]))
}

// page answers a page request: the page a cursor names.
func (g *Gateway) page(s session, req *Request) error {
	owner, e := g.actor(s, req, false)
	if e != nil {
		return e
	}
	if req.Cursor == "" {
		return errorf(CodeBadRequest, "cursor required: the next of a paged reply")
	}
	pg, err := g.cursors.take(req.Cursor, owner)
	if err != nil {
		return err
	}
	// The page answers with the id of the request that made the cursor
	// unless this request has its own.
	id := req.ID
	if len(id) == 0 {
		id = pg.id
	}
	s.reply(withArray(encode(pageReply{ID: id, Op: protocol.OpPage, Of: pg.of, Page: pg.page, More: pg.next != "", Next: pg.next}), "", [][]byte{pg.results}))
	return nil
}

// withPaging adds to the encoded object obj that pages follow: how many
// in all, and in cursor mode the cursor of the second.
func withPaging(obj []byte, pages int, next string) []byte {
	out := append(obj[:len(obj)-1:len(obj)-1], `,"more":true,"pages":`...)
	out = strconv.AppendInt(out, int64(pages), 10)
	if next != "" {
		out = append(out, `,"next":"`...)
		out = append(out, next...)
		out = append(out, '"')
	}
	return append(out, '}')
}

// withArray appends "key": the items as a JSON array to the encoded
// object obj. An empty key takes items[0] as an array already rendered,
// under "results". The reply is rendered once, into a buffer of its size:
// past results make replies of a hundred kilobytes, and every copy and
// every buffer of that size shows in the broker's CPU.
func withArray(obj []byte, key string, items [][]byte) []byte {
	rendered := key == ""
	if rendered {
		key = protocol.FieldResults
	}
	n := len(obj) + len(key) + len(`,"":[]`) + len(items)
	for _, it := range items {
		n += len(it)
	}
	out := make([]byte, 0, n)
	out = append(out, obj[:len(obj)-1]...)
	out = append(out, `,"`...)
	out = append(out, key...)
	out = append(out, `":`...)
	if rendered {
		out = append(out, items[0]...)
		return append(out, '}')
	}
	out = append(out, '[')
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return append(out, "]}"...)
}

// replyOp is the op of an encoded reply object.
func replyOp(obj []byte) string {
	var r struct {
		Op string `json:"op"`
	}
	json.Unmarshal(obj, &r)
	return r.Op
}
