package main

import (
	"errors"
	"flag"
	"math"
	"strings"

	"github.com/seed84792017/cellcast/client"
)

// location holds the location flags of sub and pub.
type location struct {
	cell, topic      string
	lat, lng, radius float64
	cover            int
}

func (l *location) flags(fs *flag.FlagSet) {
	fs.StringVar(&l.cell, "cell", "", "a Dewey cell such as 1.4.2 (t1.2 for a topic id)")
	fs.Float64Var(&l.lat, "lat", math.NaN(), "latitude of a point (with --lng)")
	fs.Float64Var(&l.lng, "lng", math.NaN(), "longitude of a point (with --lat)")
	fs.Float64Var(&l.radius, "radius", 0, "radius in metres of a circle around --lat/--lng")
	fs.IntVar(&l.cover, "cover", 0, "with --radius: put the circle on at most this many cells that cover it (1-16), not on the one cell holding it")
	fs.StringVar(&l.topic, "topic", "", "a topic path such as sports/soccer")
}

var (
	errLocation = errors.New("give one location: --cell, --lat and --lng (with optional --radius), or --topic")
	errCover    = errors.New("--cover needs a circle: --lat, --lng and --radius")
)

func (l *location) get() (client.Location, error) {
	geo := !math.IsNaN(l.lat) || !math.IsNaN(l.lng)
	n := 0
	for _, set := range []bool{l.cell != "", geo, l.topic != ""} {
		if set {
			n++
		}
	}
	switch {
	case n != 1, geo && (math.IsNaN(l.lat) || math.IsNaN(l.lng)), !geo && l.radius != 0:
		return client.Location{}, errLocation
	case l.cover != 0 && l.radius == 0:
		return client.Location{}, errCover
	case l.cover != 0:
		return client.Circle(l.lat, l.lng, l.radius).Cover(l.cover), nil
	case l.cell != "":
		return client.Cell(l.cell), nil
	case l.topic != "":
		return client.Topic(l.topic), nil
	case l.radius != 0:
		return client.Circle(l.lat, l.lng, l.radius), nil
	}
	return client.Point(l.lat, l.lng), nil
}

// cells renders where a record lies: its cell, or its cover's cells.
func cells(cell string, cover []string) string {
	if len(cover) > 0 {
		return strings.Join(cover, ",")
	}
	return cell
}
