package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/seed84792017/cellcast/client"
)

// location holds the location flags of sub and pub.
type location struct {
	cell, topic, polygon string
	lat, lng, radius     float64
	cover                int
}

func (l *location) flags(fs *flag.FlagSet) {
	fs.StringVar(&l.cell, "cell", "", "a Dewey cell such as 5.2.1.4 (an S2 face plus one, then child positions plus one; t1.2 for a topic id)")
	fs.Float64Var(&l.lat, "lat", math.NaN(), "latitude of a point (with --lng), anywhere on Earth")
	fs.Float64Var(&l.lng, "lng", math.NaN(), "longitude of a point (with --lat)")
	fs.Float64Var(&l.radius, "radius", 0, "radius in metres of a circle around --lat/--lng")
	fs.StringVar(&l.polygon, "polygon", "", "a `FILE` holding a GeoJSON Polygon or MultiPolygon: a geometry, a Feature, or a FeatureCollection of exactly one Feature; - reads stdin")
	fs.IntVar(&l.cover, "cover", 0, "with --radius or --polygon: put the shape on at most this many cells that cover it (1-16; default: the broker's --cover)")
	fs.StringVar(&l.topic, "topic", "", "a topic path such as sports/soccer")
}

var (
	errLocation = errors.New("give one location: --cell, --lat and --lng (with optional --radius), --polygon, or --topic")
	errCover    = errors.New("--cover needs a shape to cover: a circle (--lat, --lng and --radius) or --polygon")
)

// get builds the location the flags give; stdin serves --polygon -.
func (l *location) get(stdin io.Reader) (client.Location, error) {
	geo := !math.IsNaN(l.lat) || !math.IsNaN(l.lng)
	n := 0
	for _, set := range []bool{l.cell != "", geo, l.polygon != "", l.topic != ""} {
		if set {
			n++
		}
	}
	switch {
	case n != 1, geo && (math.IsNaN(l.lat) || math.IsNaN(l.lng)), !geo && l.radius != 0:
		return client.Location{}, errLocation
	case l.cover != 0 && l.radius == 0 && l.polygon == "":
		return client.Location{}, errCover
	case l.cell != "":
		return client.Cell(l.cell), nil
	case l.topic != "":
		return client.Topic(l.topic), nil
	case l.polygon != "":
		g, err := readGeometry(l.polygon, stdin)
		if err != nil {
			return client.Location{}, fmt.Errorf("--polygon %s: %w", l.polygon, err)
		}
		return covered(client.Polygon(g), l.cover), nil
	case l.radius != 0:
		return covered(client.Circle(l.lat, l.lng, l.radius), l.cover), nil
	}
	return client.Point(l.lat, l.lng), nil
}

// covered applies --cover when it is given.
func covered(l client.Location, k int) client.Location {
	if k != 0 {
		return l.Cover(k)
	}
	return l
}

// cells renders where a record lies: its cell, or its cover's cells.
func cells(cell string, cover []string) string {
	if len(cover) > 0 {
		return strings.Join(cover, ",")
	}
	return cell
}
