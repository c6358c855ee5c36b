package gateway

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/seed84792017/cellcast/delivery"
	"github.com/seed84792017/cellcast/protocol"
)

// jsonNames are the JSON names of a struct's fields, in order.
func jsonNames(v any) []string {
	t := reflect.TypeOf(v)
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// TestTagsAreTheProtocolFields: the replies the client reads by field
// name carry the protocol's names, publications in the order the client's
// decoder tries them first.
func TestTagsAreTheProtocolFields(t *testing.T) {
	for _, c := range []struct {
		what      string
		got, want []string
	}{
		{"a publication", jsonNames(pubJSON{}), protocol.PublicationFields()},
		{"an error reply", jsonNames(errorReply{}), []string{protocol.FieldID, protocol.FieldOp, protocol.FieldCode,
			protocol.FieldMessage, protocol.FieldLimit, protocol.FieldRetryAfterMs}},
		{"a page", jsonNames(pageReply{}), []string{protocol.FieldID, protocol.FieldOp, protocol.FieldOf, protocol.FieldPage,
			protocol.FieldMore, protocol.FieldNext}},
	} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s has fields %q, want %q", c.what, c.got, c.want)
		}
	}
	var ended map[string]any
	if err := json.Unmarshal(endedFrame(delivery.End{Sid: "s", Why: delivery.EndMoved, Last: 3}), &ended); err != nil {
		t.Fatal(err)
	}
	want := []string{protocol.FieldLast, protocol.FieldOp, protocol.FieldReason, protocol.FieldSid}
	if got := slices.Sorted(maps.Keys(ended)); !slices.Equal(got, want) || ended[protocol.FieldOp] != protocol.OpEnded {
		t.Errorf("an ended frame %v, want the fields %q", ended, want)
	}
}
