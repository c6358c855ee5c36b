package geo

import (
	"errors"
	"fmt"

	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
)

// checkPolygon refuses a polygon whose rings cross themselves or each
// other, or whose holes are not inside its shell. Rings are already clean
// (cleanRing).
func checkPolygon(rings Rings) error {
	loops := make([]*s2.Loop, len(rings))
	for i, r := range rings {
		if err := checkRing(r); err != nil {
			return fmt.Errorf("ring %d: %w", i, err)
		}
		loops[i] = loopOf(r)
	}
	for i := 1; i < len(rings); i++ {
		if crosses(rings[0], rings[i]) {
			return fmt.Errorf("hole %d crosses the shell", i)
		}
		if !loops[0].Contains(loops[i]) {
			return fmt.Errorf("hole %d is not inside the shell", i)
		}
		for j := 1; j < i; j++ {
			if crosses(rings[j], rings[i]) || loops[j].Intersects(loops[i]) {
				return fmt.Errorf("holes %d and %d overlap", j, i)
			}
		}
	}
	return nil
}

// checkRing refuses antipodal consecutive vertices (no shortest arc joins
// them), a vertex used twice, and edges that cross or touch.
func checkRing(r []LatLng) error {
	pts := make([]s2.Point, len(r))
	seen := make(map[s2.Point]int, len(r))
	for k, v := range r {
		pts[k] = pointOf(v)
		if at, dup := seen[pts[k]]; dup {
			return fmt.Errorf("vertices %d and %d are the same point", at, k)
		}
		seen[pts[k]] = k
	}
	n := len(pts)
	for k := range n {
		if pts[k].Distance(pts[(k+1)%n]) > maxEdge {
			return fmt.Errorf("vertices %d and %d are (nearly) antipodal: no one shortest arc joins them", k, (k+1)%n)
		}
	}
	// Each edge against every later one that is not its neighbour.
	for i := 0; i < n; i++ {
		a, b := pts[i], pts[(i+1)%n]
		cr := s2.NewChainEdgeCrosser(a, b, pts[(i+2)%n])
		for j := i + 2; j < n; j++ {
			next := pts[(j+1)%n]
			if i == 0 && j == n-1 {
				break // edges n-1 and 0 share vertex 0
			}
			if cr.ChainCrossingSign(next) != s2.DoNotCross {
				return errSelfCross(i, j)
			}
		}
	}
	return nil
}

// maxEdge is the longest edge a ring may have: near 180° the shortest
// arc between two vertices is not well defined.
const maxEdge = 179 * s1.Degree

func errSelfCross(i, j int) error {
	return fmt.Errorf("%w: edges %d and %d cross", errCrossing, i, j)
}

var errCrossing = errors.New("the ring crosses itself")

// crosses reports whether an edge of ring a crosses or touches one of b.
func crosses(a, b []LatLng) bool {
	pa, pb := points(a), points(b)
	for i := range pa {
		cr := s2.NewChainEdgeCrosser(pa[i], pa[(i+1)%len(pa)], pb[0])
		for j := range pb {
			if cr.ChainCrossingSign(pb[(j+1)%len(pb)]) != s2.DoNotCross {
				return true
			}
		}
	}
	return false
}

func points(r []LatLng) []s2.Point {
	pts := make([]s2.Point, len(r))
	for k, v := range r {
		pts[k] = pointOf(v)
	}
	return pts
}
