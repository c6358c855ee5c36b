// Package geo is Cellcast's world grid and its exact geometry: where a
// place lies on the index, and whether two places truly meet.
//
// The grid is S2's (github.com/golang/geo): the sphere projected onto a
// cube's six faces, each cut into four children per level along a Hilbert
// curve, 30 levels deep. A cell is a Dewey id: the first component is its
// face plus one (1–6), each further component its child position plus one
// (1–4), so an S2 cell of level L is a Dewey id of L+1 components and
// Dewey order is S2's cell order (neighbouring places sort near each
// other, and a cell's subtree is one key range).
//
// A Shape is a circle (a spherical cap: a centre and a radius in metres
// along the surface), a point (a circle of radius 0) or a polygon (GeoJSON
// Polygon or MultiPolygon rings whose edges are great-circle arcs). Cells
// are the index, shapes the truth: Cover puts a shape on at most K cells,
// and Intersects and IntersectsCell decide what the cells only suggest.
//
// Shapes are immutable once made and safe for concurrent use.
package geo
