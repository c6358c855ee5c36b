package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seed84792017/cellcast/client"
)

// printer writes one line per publication, human-readable or JSON.
type printer struct {
	w    io.Writer
	json bool
}

// pubJSON is a publication as the protocol renders it.
type pubJSON struct {
	Pid       string            `json:"pid"`
	Uid       string            `json:"uid"`
	Cell      string            `json:"cell"`
	Topic     string            `json:"topic,omitempty"`
	Tp        string            `json:"tp"`
	ExpiresAt string            `json:"expires_at"`
	Desc      string            `json:"desc,omitempty"`
	Attrs     map[string]string `json:"attrs,omitempty"`
	Lat       *float64          `json:"lat,omitempty"`
	Lng       *float64          `json:"lng,omitempty"`
	RadiusM   *float64          `json:"radius_m,omitempty"`
	Polygon   json.RawMessage   `json:"polygon,omitempty"`
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func toJSON(p *client.Publication) pubJSON {
	j := pubJSON{Pid: p.Pid, Uid: p.Uid, Cell: p.Cell, Topic: p.Topic, Tp: stamp(p.Tp), ExpiresAt: stamp(p.ExpiresAt), Desc: p.Desc, Attrs: p.Attrs}
	if p.At != nil {
		j.Lat, j.Lng = &p.At.Lat, &p.At.Lng
		if p.At.RadiusM > 0 {
			j.RadiusM = &p.At.RadiusM
		}
	}
	j.Polygon = p.Polygon
	return j
}

// where says where a publication is, briefly: its topic, its point or
// circle ("40.758,-73.9855 r=500m"), its polygon ("polygon (4
// vertices)"), or else its cell. A place says more than an S2 cell id.
func where(p *client.Publication) string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	switch {
	case p.Topic != "":
		return p.Topic
	case p.At != nil && p.At.RadiusM > 0:
		return num(p.At.Lat) + "," + num(p.At.Lng) + " r=" + num(p.At.RadiusM) + "m"
	case p.At != nil:
		return num(p.At.Lat) + "," + num(p.At.Lng)
	case p.Polygon != nil:
		return polygonSummary(p.Polygon)
	}
	return p.Cell
}

func (pr *printer) object(v any) {
	b, _ := json.Marshal(v) // our own types: always marshal
	fmt.Fprintf(pr.w, "%s\n", b)
}

// publication prints p, tagged (past, live #seq, or nothing for a query).
func (pr *printer) publication(tag string, sid string, seq int64, p *client.Publication) {
	if pr.json {
		pr.object(struct {
			Sid         string  `json:"sid,omitempty"`
			Seq         int64   `json:"seq,omitempty"`
			Past        bool    `json:"past,omitempty"`
			Publication pubJSON `json:"publication"`
		}{sid, seq, tag == "past", toJSON(p)})
		return
	}
	var b strings.Builder
	if tag != "" {
		fmt.Fprintf(&b, "%-5s ", tag)
	}
	fmt.Fprintf(&b, "%s  %s  %s: %s", p.Tp.Local().Format("2006-01-02 15:04:05.000"), where(p), p.Uid, p.Desc)
	for _, k := range slices.Sorted(maps.Keys(p.Attrs)) {
		fmt.Fprintf(&b, "  %s=%s", k, p.Attrs[k])
	}
	fmt.Fprintln(pr.w, b.String())
}
