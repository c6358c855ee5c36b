package gateway

import (
	"slices"
	"unicode/utf8"
)

// A publication is rendered once per encoding, but that once is one
// json.Marshal by reflection per publication: half of a rendering's
// time, and renderings were 2.6% of the broker's CPU at 1:3. The
// publications with no shape (a cell's or a topic's) are rendered here
// instead, byte for byte as encoding/json renders them; the others go
// through json.Marshal.

// appendPubJSON appends j as json.Marshal renders it, and reports false
// (appending nothing) for a publication with a shape.
func appendPubJSON(b []byte, j *pubJSON) ([]byte, bool) {
	if j.Lat != nil || j.Lng != nil || j.RadiusM != nil || j.Polygon != nil {
		return b, false
	}
	b = append(b, `{"pid":`...)
	b = appendJSONString(b, j.Pid)
	b = append(b, `,"uid":`...)
	b = appendJSONString(b, j.Uid)
	b = append(b, `,"cell":`...)
	b = appendJSONString(b, j.Cell)
	if j.Topic != "" {
		b = append(b, `,"topic":`...)
		b = appendJSONString(b, j.Topic)
	}
	b = append(b, `,"tp":`...)
	b = appendJSONString(b, j.Tp)
	b = append(b, `,"expires_at":`...)
	b = appendJSONString(b, j.ExpiresAt)
	if j.Desc != "" {
		b = append(b, `,"desc":`...)
		b = appendJSONString(b, j.Desc)
	}
	if len(j.Attrs) > 0 {
		keys := make([]string, 0, len(j.Attrs))
		for k := range j.Attrs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, `,"attrs":{`...)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, j.Attrs[k])
		}
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// appendJSONString appends s as encoding/json renders a string: HTML's
// <, > and & escaped, invalid UTF-8 as U+FFFD, U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
