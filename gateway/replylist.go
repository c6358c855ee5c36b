package gateway

import "bufio"

// A reply with a list of publications (past results, recent ones, query
// results) is a hundred kilobytes and more of publications the cache has
// already rendered. Joined into one buffer, it cost an allocation and a
// copy of its size, two fifths of what the broker allocated at 10k moving
// users. A JSON WebSocket queues the reply as its head and the rendered
// publications instead, and the writer copies them once, into its buffer.

// replyList queues head with its list unjoined (replier.replyList).
func (c *wsConn) replyList(head []byte, key string, items [][]byte) {
	if c.bin {
		c.reply(withArray(head, key, items)) // transcoded whole
		return
	}
	prefix := make([]byte, 0, len(head)+len(key)+5)
	prefix = append(prefix, head[:len(head)-1]...)
	prefix = append(prefix, `,"`...)
	prefix = append(prefix, key...)
	prefix = append(prefix, `":[`...)
	c.enqueueReply(frame{data: prefix, list: items})
}

const listEnd = "]}"

// listBytes is the length of a list frame's items with their commas.
func listBytes(items [][]byte) int {
	n := max(len(items)-1, 0)
	for _, it := range items {
		n += len(it)
	}
	return n
}

// writeList writes a list frame's payload after its head, b, in the
// buffer's free space. On an error it returns what the buffer did not
// take, rendered whole: the connection is being cut, so the copy is rare.
func writeList(w *bufio.Writer, b []byte, f frame) (tail []byte, err error) {
	b = append(b, f.data...)
	if m, err := w.Write(b); err != nil {
		return rest(b[m:], f.list, 0), err
	}
	for i, it := range f.list {
		if i > 0 {
			if err := w.WriteByte(','); err != nil {
				return rest(nil, f.list, i), err
			}
		}
		if m, err := w.Write(it); err != nil {
			return rest(it[m:], f.list, i+1), err
		}
	}
	if m, err := w.WriteString(listEnd); err != nil {
		return []byte(listEnd[m:]), err
	}
	return nil, nil
}

// rest renders a list frame's unwritten part: first, then the items from
// from on, then the end.
func rest(first []byte, items [][]byte, from int) []byte {
	out := append([]byte(nil), first...)
	for i := from; i < len(items); i++ {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, items[i]...)
	}
	return append(out, listEnd...)
}
