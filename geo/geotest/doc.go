// Package geotest draws random places and shapes for tests: anywhere on
// Earth, and often where geometry is hard (across the antimeridian, by
// the poles, on a cell's corner).
package geotest
