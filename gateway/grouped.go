package gateway

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"unsafe"

	"github.com/gorilla/websocket"

	"github.com/seed84792017/cellcast/protocol"
)

// A connection that opens with ?notifications=grouped gets the
// notifications of one publication to several of its subscriptions in one
// frame, the publication written once:
//
//	{"op":"notifications","to":[{"sid":"…","seq":…},…],"publication":{…}}
//
// A client multiplexing many users' subscriptions (a gateway, a load
// generator) otherwise reads the same publication once per subscription:
// the dispatcher fans a publication out to every matching route before the
// next, so its notifications to one connection lie side by side in the
// queue, and the writer merges them there. Nothing else changes: the
// queue's bounds, lag and catch-up count notifications as before.

// groupedNotifications reads the handshake's notifications parameter.
func groupedNotifications(r *http.Request) (bool, error) {
	switch v := r.URL.Query().Get(protocol.ParamNotifications); v {
	case "":
		return false, nil
	case protocol.NotificationsGrouped:
		return true, nil
	default:
		return false, fmt.Errorf("notifications=%.40q: the only value is grouped", v)
	}
}

// maxGroupBytes bounds what a grouped frame spends on its recipients, so
// that a client's frame limit is never at stake.
const maxGroupBytes = 64 << 10

// groupLen is how many frames from fs[0] on are notifications of the same
// publication, to go out as one grouped frame (1: fs[0] alone).
func groupLen(fs []frame) int {
	f := fs[0]
	if f.tp == 0 {
		return 1
	}
	body, size := unsafe.SliceData(f.data), 0
	n := 0
	for ; n < len(fs); n++ {
		g := &fs[n]
		if g.tp == 0 || g.bin != f.bin || len(g.data) != len(f.data) || unsafe.SliceData(g.data) != body {
			break
		}
		if size += len(g.sid) + 32; size > maxGroupBytes {
			break
		}
	}
	return max(n, 1)
}

const (
	groupPrefix = protocol.GroupPrefix
	groupSid    = protocol.GroupSid
	groupSeq    = protocol.NoteSeq
	groupPub    = protocol.GroupPublication

	cborGroupPrefix = protocol.CBORGroupPrefix
	cborGroupSid    = protocol.CBORGroupSid
)

// groupSize is the payload length of fs as one grouped frame.
func groupSize(fs []frame) int {
	var digits [20]byte
	n := 0
	if fs[0].bin {
		n = len(cborGroupPrefix) + headLen(uint64(len(fs))) + len(cborNotePub) + len(fs[0].data)
		for i := range fs {
			seq := fs[i].seq
			n += len(cborGroupSid) + headLen(uint64(len(fs[i].sid))) + len(fs[i].sid) + len(cborNoteSeq) + headLen(uint64(max(seq, -1-seq)))
		}
		return n
	}
	n = len(groupPrefix) + len(fs) - 1 + len(groupPub) + len(fs[0].data) + len(noteSuffix)
	for i := range fs {
		n += len(groupSid) + len(fs[i].sid) + len(groupSeq) + len(strconv.AppendInt(digits[:0], fs[i].seq, 10)) + len(noteSuffix)
	}
	return n
}

// writeGroup writes fs, notifications of one publication, as one grouped
// frame, as writeFrame writes one.
func writeGroup(w *bufio.Writer, fs []frame) (tail []byte, err error) {
	op := byte(websocket.TextMessage)
	if fs[0].bin {
		op = websocket.BinaryMessage
	}
	n := groupSize(fs)
	if n+10 > w.Available() && n+10 <= w.Size() {
		// Into the buffer's whole space rather than a slice of its own.
		if err := w.Flush(); err != nil {
			return nil, err
		}
	}
	b := appendFrameHead(w.AvailableBuffer(), op, n)
	if fs[0].bin {
		b = append(b, cborGroupPrefix...)
		b = appendHead(b, 4, uint64(len(fs)))
		for i := range fs {
			b = append(b, cborGroupSid...)
			b = appendHead(b, 3, uint64(len(fs[i].sid)))
			b = append(b, fs[i].sid...)
			b = append(b, cborNoteSeq...)
			b = appendInt(b, fs[i].seq)
		}
		b = append(b, cborNotePub...)
	} else {
		b = append(b, groupPrefix...)
		for i := range fs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, groupSid...)
			b = append(b, fs[i].sid...)
			b = append(b, groupSeq...)
			b = strconv.AppendInt(b, fs[i].seq, 10)
			b = append(b, noteSuffix...)
		}
		b = append(b, groupPub...)
	}
	b = append(b, fs[0].data...)
	if !fs[0].bin {
		b = append(b, noteSuffix...)
	}
	if m, err := w.Write(b); err != nil {
		return b[m:], err
	}
	return nil, nil
}
