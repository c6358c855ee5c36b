package gateway

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/seed84792017/cellcast/auth"
	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/protocol"
)

// ServeHTTP serves POST /api/{op} with a request body as on the other
// transports and the reply as the response. HTTP has nowhere to push to:
// a subscription made here is stored and answers with its past results,
// and a WebSocket or NATS client can resume it to get what follows.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := &httpSession{}
	if g.cfg.Auth != nil {
		id, err := g.cfg.Auth.Verify(auth.Bearer(r.Header.Get("Authorization")))
		if err != nil {
			writeJSON(w, http.StatusUnauthorized, errorFrame(nil, &Error{Code: CodeUnauthorized, Message: err.Error()}))
			return
		}
		s.user = id.UID
	}
	body, err := readAtMost(http.MaxBytesReader(w, r.Body, int64(g.limits.MaxFrame)*16), nil, g.limits.MaxFrame)
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, errorFrame(nil, errorf(CodeTooLarge, "request over %d bytes", g.limits.MaxFrame)))
		return
	}
	op := r.PathValue("op")
	req, e := decodeRequest(body)
	if e == nil {
		e = natsRequest(req, op, "")
	} else {
		req.Op = op // for the metrics
	}
	if e == nil && op == protocol.OpResume {
		e = errorf(CodeBadRequest, "resume needs a WebSocket or NATS client to push to")
	}
	if e == nil && req.Paging == pagingPush {
		e = errorf(CodeBadRequest, "HTTP cannot push pages: paging is cursor here")
	}
	// The request's context: a client that hangs up ends what its request
	// waits for (a cluster call, a query). A write the store has begun
	// still finishes and is dispatched: stores look at the context only
	// before they stamp.
	g.serveDecoded(r.Context(), s, req, e)
	status := http.StatusOK
	if s.err != "" {
		status = statusOf(s.err)
	}
	if s.retry > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((s.retry+time.Second-1)/time.Second)))
	}
	writeJSON(w, status, s.out)
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
	io.WriteString(w, "\n")
}

func statusOf(code string) int {
	switch code {
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden:
		return http.StatusForbidden
	case CodeNotFound:
		return http.StatusNotFound
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeOverloaded:
		return http.StatusTooManyRequests
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	case CodeInternal:
		return http.StatusInternalServerError
	}
	return http.StatusBadRequest
}

// httpSession keeps the one reply of its request.
type httpSession struct {
	user  string
	out   []byte
	err   string
	retry time.Duration
}

func (s *httpSession) transport() string   { return "http" }
func (s *httpSession) uid() string         { return s.user }
func (s *httpSession) sink() delivery.Sink { return nil }
func (s *httpSession) admit() bool         { return true }
func (s *httpSession) holds(string)        {}
func (s *httpSession) reply(b []byte)      { s.out = b }
func (s *httpSession) failed(e *Error)     { s.err, s.retry = e.Code, e.RetryAfter }

// An HTTP response is one reply: more pages are pulled by cursor.
func (s *httpSession) replyAll([][]byte) bool { return false }
func (s *httpSession) replyBudget(b int) int  { return b }
func (s *httpSession) replyList(head []byte, key string, items [][]byte) {
	s.reply(withArray(head, key, items))
}

// readAtMost reads r into buf, failing past max bytes.
func readAtMost(r io.Reader, buf []byte, max int) ([]byte, error) {
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > max {
			return buf, fmt.Errorf("request over %d bytes", max)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}
