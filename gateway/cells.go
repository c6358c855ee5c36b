package gateway

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
)

// ServeCells serves GET /cells: the outlines of grid cells as a GeoJSON
// FeatureCollection, for maps that draw the grid (the demo does). Either
// ids=1.2.3,4.1 names the cells (at most maxCellIDs), or box=south,west,
// north,east and level=L ask for the cells of level L that cover the box
// (at most maxBoxCells). Each feature's properties hold its id and level;
// its geometry is the cell's four corners (its edges are great-circle
// arcs, which a map draws as lines between them).
func ServeCells(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var ids []dewey.ID
	switch {
	case q.Has("ids"):
		parts := strings.Split(q.Get("ids"), ",")
		if len(parts) > maxCellIDs {
			cellsError(w, "ids: %d cells, at most %d", len(parts), maxCellIDs)
			return
		}
		for _, p := range parts {
			id, err := dewey.Parse(p)
			if err != nil || !geo.IsCell(id) {
				cellsError(w, "ids: %q is not a cell of the world grid", p)
				return
			}
			ids = append(ids, id)
		}
	case q.Has("box"):
		var b [4]float64
		parts := strings.Split(q.Get("box"), ",")
		ok := len(parts) == 4
		for i := 0; ok && i < 4; i++ {
			var err error
			b[i], err = strconv.ParseFloat(parts[i], 64)
			ok = err == nil
		}
		level, err := strconv.Atoi(q.Get("level"))
		if !ok || err != nil {
			cellsError(w, "box=south,west,north,east and level=L, numbers")
			return
		}
		if ids, err = geo.CellsInBox(b[0], b[1], b[2], b[3], level, maxBoxCells); err != nil {
			cellsError(w, "%s", trimGeo(err))
			return
		}
	default:
		cellsError(w, "give ids=… or box=south,west,north,east&level=L")
		return
	}
	out := []byte(`{"type":"FeatureCollection","features":[`)
	for i, id := range ids {
		corners, _ := geo.CellBounds(id)
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, `{"type":"Feature","properties":{"id":"`...)
		out = append(out, id.String()...)
		out = append(out, `","level":`...)
		out = strconv.AppendInt(out, int64(len(id)-1), 10)
		out = append(out, `},"geometry":{"type":"Polygon","coordinates":[[`...)
		for k := 0; k <= 4; k++ {
			c := corners[k%4]
			if k > 0 {
				out = append(out, ',')
			}
			out = append(out, '[')
			out = strconv.AppendFloat(out, c[1], 'g', -1, 64)
			out = append(out, ',')
			out = strconv.AppendFloat(out, c[0], 'g', -1, 64)
			out = append(out, ']')
		}
		out = append(out, `]]}}`...)
	}
	out = append(out, "]}"...)
	w.Header().Set("Cache-Control", "public, max-age=86400") // the grid never changes
	w.Header().Set("Content-Type", "application/geo+json")
	w.Write(out)
}

const (
	maxCellIDs  = 256
	maxBoxCells = 4096
)

func cellsError(w http.ResponseWriter, format string, args ...any) {
	writeJSON(w, http.StatusBadRequest, errorFrame(nil, errorf(CodeBadRequest, format, args...)))
}
