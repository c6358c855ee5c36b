package cluster

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/gateway"
	"github.com/seed84792017/cellcast/protocol"
	"github.com/seed84792017/cellcast/service"
	"github.com/seed84792017/cellcast/subscriptions"
)

// TestWireErrorsKeepTheirCode: an owner's error, carried to the node
// holding the client, still matches its class there, and gets the client
// the code and the retry hint one node would give. Every protocol code is
// walked: a new one fails here until the table says which errors of an
// owner get it.
func TestWireErrorsKeepTheirCode(t *testing.T) {
	// The errors an owner answers with, by the code a client gets for
	// them; nil for the codes only the gateway gives (auth, frames,
	// quotas, ops), which never cross nodes.
	owners := map[string][]error{
		protocol.CodeBadRequest: {fmt.Errorf("%w: lat 91", subscriptions.ErrBadRequest),
			fmt.Errorf("%w: attribute \"colour\" is not indexed", service.ErrBadQuery), service.ErrNoCatalog},
		protocol.CodeForbidden:    {fmt.Errorf("%w: x-1 is bob's", delivery.ErrForbidden)},
		protocol.CodeNotFound:     {fmt.Errorf("%w: x-1", subscriptions.ErrUnknownSid)},
		protocol.CodeOverloaded:   {&delivery.OverloadedError{Backlog: 9, Bytes: 900, RetryAfter: 1500*time.Millisecond + 1}, &delivery.OverloadedError{Behind: true, RetryAfter: time.Second}},
		protocol.CodeUnavailable:  {fmt.Errorf("%w: shard g3 is moving", service.ErrUnavailable)},
		protocol.CodeInternal:     {errors.New("the disk failed")},
		protocol.CodeUnauthorized: nil,
		protocol.CodeTooLarge:     nil,
		protocol.CodeTooMany:      nil,
		protocol.CodeUnknownOp:    nil,
	}
	classes := []error{subscriptions.ErrBadRequest, service.ErrBadQuery, service.ErrNoCatalog, delivery.ErrForbidden,
		subscriptions.ErrUnknownSid, service.ErrUnavailable}
	for _, code := range protocol.Codes() {
		errs, ok := owners[code]
		if !ok {
			t.Errorf("code %q: which errors of an owner get it? (none: nil)", code)
			continue
		}
		for _, err := range errs {
			want := gateway.CodeOf(err)
			if want.Code != code {
				t.Errorf("%v: the gateway answers %q, the table says %q", err, want.Code, code)
			}
			r, derr := decodeReply(encodeReply(&reply{Err: toWire(err)}, nil), newKeptRefs(0))
			if derr != nil || r.Err == nil {
				t.Fatalf("%v: the reply came back as %+v, %v", err, r, derr)
			}
			got := fromWire(r.Err)
			for _, c := range classes {
				if errors.Is(got, c) != errors.Is(err, c) {
					t.Errorf("%v (kind %q): errors.Is(%v) is %v across nodes", err, r.Err.Kind, c, !errors.Is(err, c))
				}
			}
			var oe, goe *delivery.OverloadedError
			if errors.As(err, &oe) && (!errors.As(got, &goe) || goe.RetryAfter != oe.RetryAfter) {
				t.Errorf("%v: across nodes %#v", err, got)
			}
			have := gateway.CodeOf(got)
			if have.Code != want.Code || have.RetryAfter != want.RetryAfter || have.Limit != want.Limit {
				t.Errorf("%v: a client gets %+v across nodes, %+v from one", err, have, want)
			}
			if (errors.Is(err, service.ErrBadQuery) || errors.Is(err, service.ErrNoCatalog)) && have.Message != want.Message {
				t.Errorf("a query's error reads %q across nodes, %q from one", have.Message, want.Message)
			}
		}
	}
}
