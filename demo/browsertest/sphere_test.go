package browsertest

import "math"

// The test's own geometry, on the broker's sphere (geo.EarthRadiusM),
// written from the formulas and not from the broker's code: what the
// page's "My alerts" is checked against.

const earthR = 6_371_008.8

type latLng struct {
	Lat float64 `json:"lat"`
	Lng float64 `json:"lng"`
}

const rad = math.Pi / 180

// haversineM is the great-circle distance between a and b.
func haversineM(a, b latLng) float64 {
	h := math.Pow(math.Sin((b.Lat-a.Lat)*rad/2), 2) + math.Cos(a.Lat*rad)*math.Cos(b.Lat*rad)*math.Pow(math.Sin((b.Lng-a.Lng)*rad/2), 2)
	return 2 * earthR * math.Asin(math.Min(1, math.Sqrt(h)))
}

// bearingRad is the initial bearing from a to b, radians from north.
func bearingRad(a, b latLng) float64 {
	φ1, φ2, Δλ := a.Lat*rad, b.Lat*rad, (b.Lng-a.Lng)*rad
	return math.Atan2(math.Sin(Δλ)*math.Cos(φ2), math.Cos(φ1)*math.Sin(φ2)-math.Sin(φ1)*math.Cos(φ2)*math.Cos(Δλ))
}

// destination is the point m metres from p towards bearing deg degrees.
func destination(p latLng, deg, m float64) latLng {
	δ, θ, φ1, λ1 := m/earthR, deg*rad, p.Lat*rad, p.Lng*rad
	φ2 := math.Asin(math.Sin(φ1)*math.Cos(δ) + math.Cos(φ1)*math.Sin(δ)*math.Cos(θ))
	λ2 := λ1 + math.Atan2(math.Sin(θ)*math.Sin(δ)*math.Cos(φ1), math.Cos(δ)-math.Sin(φ1)*math.Sin(φ2))
	return latLng{φ2 / rad, math.Remainder(λ2/rad, 360)}
}

// arcDistanceM is the distance from p to the great-circle arc a–b: the
// cross-track distance where p's foot falls on the arc, else to the
// nearer end.
func arcDistanceM(p, a, b latLng) float64 {
	δ13, δ12 := haversineM(a, p)/earthR, haversineM(a, b)/earthR
	dθ := bearingRad(a, p) - bearingRad(a, b)
	if δ12 == 0 || math.Cos(dθ) < 0 {
		return δ13 * earthR
	}
	xt := math.Asin(math.Sin(δ13) * math.Sin(dθ))
	if along := math.Acos(math.Min(1, math.Cos(δ13)/math.Cos(xt))); along > δ12 {
		return haversineM(b, p)
	}
	return math.Abs(xt) * earthR
}

// insideRing: the bearings from p to a small ring's vertices turn once
// around p when p is inside it.
func insideRing(p latLng, ring []latLng) bool {
	turn := 0.0
	for i := range ring {
		turn += math.Remainder(bearingRad(p, ring[(i+1)%len(ring)])-bearingRad(p, ring[i]), 2*math.Pi)
	}
	return math.Abs(turn) > math.Pi
}

// polygonDistanceM is how far p is from a polygon given as GeoJSON rings
// ([lng, lat], closed): 0 inside its shell and outside its holes, else
// the distance to its nearest edge.
func polygonDistanceM(p latLng, rings [][][2]float64) float64 {
	ll := make([][]latLng, len(rings))
	for i, r := range rings {
		for _, v := range r[:len(r)-1] {
			ll[i] = append(ll[i], latLng{v[1], v[0]})
		}
	}
	in := insideRing(p, ll[0])
	for _, hole := range ll[1:] {
		in = in && !insideRing(p, hole)
	}
	if in {
		return 0
	}
	d := math.Inf(1)
	for _, r := range ll {
		for i := range r {
			d = math.Min(d, arcDistanceM(p, r[i], r[(i+1)%len(r)]))
		}
	}
	return d
}
