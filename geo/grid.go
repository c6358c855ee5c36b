package geo

import (
	"errors"
	"fmt"
	"math"

	"github.com/golang/geo/r1"
	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"

	"github.com/seed84792017/cellcast/dewey"
)

const (
	// MaxLevel is the deepest S2 level; its cells are about a centimetre
	// across.
	MaxLevel = s2.MaxLevel
	// MaxDepth is the number of Dewey components of a MaxLevel cell.
	MaxDepth = MaxLevel + 1
	// DefaultLevel is where a bare point is indexed: cells of 0.6 to 1.2
	// hectares, about 100–150 m across (today's city-scale resolution).
	DefaultLevel = 16
	// EarthRadiusM is the sphere every distance is measured on: the
	// Earth's mean radius (IUGG), in metres.
	EarthRadiusM = 6_371_008.8
)

// Errors of the grid; each names what is wrong.
var (
	ErrLatLng = errors.New("geo: coordinates out of range")
	ErrLevel  = errors.New("geo: level out of range")
	ErrNoCell = errors.New("geo: not a cell of the world grid")
)

// posBits is the width of a cell id's position below the face.
const posBits = 2*MaxLevel + 1

// CellID returns the S2 cell a Dewey id names; ok is false when the id is
// not a grid cell (a first component outside 1–6, a later one outside
// 1–4, or deeper than MaxDepth).
func CellID(id dewey.ID) (s2.CellID, bool) {
	if len(id) == 0 || len(id) > MaxDepth || id[0] < 1 || id[0] > 6 {
		return 0, false
	}
	v := uint64(id[0]-1) << posBits
	for i, c := range id[1:] {
		if c < 1 || c > 4 {
			return 0, false
		}
		v |= uint64(c-1) << (posBits - 2*uint(i+1))
	}
	lsb := uint64(1) << (2 * uint(MaxLevel-(len(id)-1)))
	return s2.CellID(v | lsb), true
}

// IsCell reports whether id is a cell of the world grid.
func IsCell(id dewey.ID) bool {
	_, ok := CellID(id)
	return ok
}

// Dewey returns the Dewey id of an S2 cell.
func Dewey(c s2.CellID) dewey.ID {
	level := c.Level()
	id := make(dewey.ID, level+1)
	id[0] = uint32(c.Face()) + 1
	for l := 1; l <= level; l++ {
		id[l] = uint32(c.ChildPosition(l)) + 1
	}
	return id
}

// CheckLatLng refuses coordinates no map holds: not finite, |lat| > 90 or
// |lng| > 180.
func CheckLatLng(lat, lng float64) error {
	if !(lat >= -90 && lat <= 90) {
		return fmt.Errorf("%w: lat %v not in -90…90", ErrLatLng, lat)
	}
	if !(lng >= -180 && lng <= 180) {
		return fmt.Errorf("%w: lng %v not in -180…180", ErrLatLng, lng)
	}
	return nil
}

// PointCell returns the cell of the given level that holds the point.
func PointCell(lat, lng float64, level int) (dewey.ID, error) {
	if err := CheckLatLng(lat, lng); err != nil {
		return nil, err
	}
	if level < 0 || level > MaxLevel {
		return nil, fmt.Errorf("%w: %d not in 0…%d", ErrLevel, level, MaxLevel)
	}
	return Dewey(s2.CellIDFromLatLng(s2.LatLngFromDegrees(lat, lng)).Parent(level)), nil
}

// CellBounds returns a cell's four corners, counter-clockwise, as
// latitude and longitude in degrees: what a map draws.
func CellBounds(id dewey.ID) ([4][2]float64, error) {
	c, ok := CellID(id)
	if !ok {
		return [4][2]float64{}, fmt.Errorf("%w: %v", ErrNoCell, id)
	}
	cell := s2.CellFromCellID(c)
	var out [4][2]float64
	for k := range 4 {
		ll := s2.LatLngFromPoint(cell.Vertex(k))
		out[k] = [2]float64{ll.Lat.Degrees(), ll.Lng.Degrees()}
	}
	return out, nil
}

// CellEdgeM is the average edge of a cell of the given level, in metres:
// for docs and messages, not for geometry.
func CellEdgeM(level int) float64 {
	return math.Sqrt(4*math.Pi/(6*math.Pow(4, float64(level)))) * EarthRadiusM
}

// CellsInBox lists the cells of a level that cover a latitude/longitude
// box (south ≤ north; west > east crosses the antimeridian), for a map
// that draws the grid. It refuses a box that would need more than limit
// cells.
func CellsInBox(south, west, north, east float64, level, limit int) ([]dewey.ID, error) {
	for _, c := range [][2]float64{{south, west}, {north, east}} {
		if err := CheckLatLng(c[0], c[1]); err != nil {
			return nil, err
		}
	}
	if south > north {
		return nil, fmt.Errorf("%w: south %v above north %v", ErrLatLng, south, north)
	}
	if level < 0 || level > MaxLevel {
		return nil, fmt.Errorf("%w: %d not in 0…%d", ErrLevel, level, MaxLevel)
	}
	const rad = math.Pi / 180
	// s1.Interval takes west > east as an interval across the antimeridian.
	rect := s2.Rect{Lat: r1.Interval{Lo: south * rad, Hi: north * rad}, Lng: s1.IntervalFromEndpoints(west*rad, east*rad)}
	if n := rect.Area() / s2.MinAreaMetric.Value(level); n > float64(limit) {
		return nil, fmt.Errorf("%w: about %.0f cells of level %d in the box, limit %d", ErrLevel, n, level, limit)
	}
	rc := &s2.RegionCoverer{MinLevel: level, MaxLevel: level, MaxCells: limit}
	cu := rc.Covering(rect)
	if len(cu) > limit {
		return nil, fmt.Errorf("%w: %d cells of level %d in the box, limit %d", ErrLevel, len(cu), level, limit)
	}
	out := make([]dewey.ID, len(cu))
	for i, c := range cu {
		out[i] = Dewey(c)
	}
	return out, nil
}
