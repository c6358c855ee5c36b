package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"time"

	"github.com/seed84792017/cellcast/bench/places"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
)

// Kind is an operation's type.
type Kind byte

const (
	Subscribe Kind = 'S'
	Publish   Kind = 'P'
)

// Op is one operation.
type Op struct {
	Kind Kind
	At   time.Duration // from the start of the run
	Uid  string
	Cell dewey.ID
	// Where the user stands, and for circle workloads the circle's radius
	// (0 otherwise); Cell is derived from them. In the s2 space Cell is a
	// cell of the world grid (package geo); in the others, one of the
	// thesis's quad tree or grid over New York, which are Dewey ids too but
	// name no place on the grid.
	Lat, Lng, RadiusM float64
	SelfJoin          bool
	Past, Future      time.Duration // SUBSCRIBE
	Expires           time.Duration // PUBLISH
	Desc              string        // PUBLISH
}

// Space is how locations become cells.
type Space string

const (
	Grid   Space = "grid"   // 500×500 flat grid
	Quad   Space = "quad"   // quad tree of Depth, levels ∝ 1/2^(Depth−i)
	Circle Space = "circle" // circles of radius {4,2,1,½,¼}·Radius
	// S2 is the broker's world grid (package geo): the cell of the user's
	// point at an S2 level from MinLevel to Level, level i ∝ 1/2^(Level−i).
	S2 Space = "s2"
)

// The s2 space's default levels: cells of about 10 km (a town, a
// borough's part) down to about 150 m (the broker's --geo-level), the
// deeper likelier.
const (
	DefaultS2Level    = geo.DefaultLevel
	DefaultS2MinLevel = 10
)

// Config shapes a workload. Zero fields take the thesis's defaults.
type Config struct {
	Seed  int64
	Ops   int // operations (default 1,000,000)
	Users int // moving users (default 10,000)
	// SubsPerPub is the subscription:publication ratio: 3 for
	// subscription-heavy, 1/3 for publication-heavy (default 1).
	SubsPerPub   float64
	Past, Future time.Duration // windows of every SUBSCRIBE (default 10 s each)
	Expires      time.Duration // lifetime of every publication (default 20 s)
	Space        Space         // default Grid (the thesis's); S2 for load on a broker
	GridSize     int           // cells per side of the grid (default 500)
	Depth        int           // quad tree depth (default 5)
	// Level is, for Quad, the level of every operation (0: drawn); for S2,
	// the finest S2 level (up to 30), where moves are told and the deepest
	// cells drawn (0: DefaultS2Level).
	Level int
	// MinLevel is the shallowest level drawn: for Quad, in tree levels (0:
	// from 1); for S2, an S2 level (0 with Level 0 too: DefaultS2MinLevel;
	// with Level set, 0 is the face cell's level). A cluster's shard depth
	// keeps every cell in one shard (S2: MinLevel ≥ shard depth − 1).
	MinLevel    int
	Radius      float64 // Circle: R in metres (default 2,000)
	RadiusTimes float64 // Circle: every radius is this times R (0: drawn from 4, 2, 1, ½, ¼)
	SelfJoin    float64 // share of operations that are self-joins
	Rate        float64 // operations per second, for At (default 100,000)
	ZIPShare    float64 // share of users starting at a ZIP centroid (default 0.2)
	Step        float64 // metres per walk step (default 300)
}

// ErrConfig is returned for a Config that cannot make a workload.
var ErrConfig = errors.New("workload: bad config")

func (c Config) withDefaults() (Config, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	deff := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Ops, 1_000_000)
	def(&c.Users, 10_000)
	def(&c.GridSize, 500)
	def(&c.Depth, 5)
	deff(&c.SubsPerPub, 1)
	deff(&c.Radius, 2000)
	deff(&c.Rate, 100_000)
	deff(&c.ZIPShare, 0.2)
	deff(&c.Step, 300)
	defd(&c.Past, 10*time.Second)
	defd(&c.Future, 10*time.Second)
	defd(&c.Expires, 20*time.Second)
	if c.Space == "" {
		c.Space = Grid
	}
	if c.Space == S2 && c.Level == 0 {
		c.Level = DefaultS2Level
		if c.MinLevel == 0 {
			c.MinLevel = DefaultS2MinLevel
		}
	}
	for _, f := range []float64{c.SubsPerPub, c.Radius, c.RadiusTimes, c.Rate, c.Step, c.SelfJoin, c.ZIPShare} {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return c, fmt.Errorf("%w: %g is not a finite number", ErrConfig, f)
		}
	}
	switch {
	case c.Ops < 0, c.Users < 0, c.GridSize < 0, c.Depth < 0, c.Level < 0, c.MinLevel < 0:
		return c, fmt.Errorf("%w: negative count, depth or level", ErrConfig)
	case c.SubsPerPub < 0, c.Radius < 0, c.RadiusTimes < 0, c.Rate < 0, c.Step < 0, c.Past < 0, c.Future < 0, c.Expires < 0:
		return c, fmt.Errorf("%w: negative ratio, radius, rate, step or window", ErrConfig)
	case c.SelfJoin < 0 || c.SelfJoin > 1 || c.ZIPShare < 0 || c.ZIPShare > 1:
		return c, fmt.Errorf("%w: shares must lie in [0, 1]", ErrConfig)
	case c.Space != Grid && c.Space != Quad && c.Space != Circle && c.Space != S2:
		return c, fmt.Errorf("%w: space %q (want s2, grid, quad or circle)", ErrConfig, c.Space)
	case c.Depth > dewey.MaxGeoDepth:
		return c, fmt.Errorf("%w: depth %d above %d", ErrConfig, c.Depth, dewey.MaxGeoDepth)
	case c.Space == S2:
		return c, c.checkS2Levels()
	case c.Level > c.Depth:
		return c, fmt.Errorf("%w: level %d below the tree's depth %d", ErrConfig, c.Level, c.Depth)
	case c.MinLevel > 0 && (c.Space != Quad || c.MinLevel > c.Depth || (c.Level > 0 && c.Level < c.MinLevel)):
		return c, fmt.Errorf("%w: minimum level %d needs the quad or s2 space, a level at or below it and a depth of at least %d", ErrConfig, c.MinLevel, c.MinLevel)
	}
	return c, nil
}

// checkS2Levels checks the s2 space's levels, defaults filled in.
func (c Config) checkS2Levels() error {
	switch {
	case c.Level > geo.MaxLevel:
		return fmt.Errorf("%w: S2 level %d: use 0 to %d", ErrConfig, c.Level, geo.MaxLevel)
	case c.MinLevel > c.Level:
		return fmt.Errorf("%w: minimum S2 level %d is deeper than the level %d (the finest cells)", ErrConfig, c.MinLevel, c.Level)
	}
	return nil
}

// incidents are the kinds of publication.
var incidents = []string{"accident", "fire", "roadwork", "flood", "power outage", "police activity", "fallen tree", "traffic jam", "gas leak", "road closed"}

type user struct {
	uid      string
	lat, lng float64
	leaf     string // the finest cell the user is in, to tell moves
}

// Generator makes a workload's operations one by one.
type Generator struct {
	cfg     Config
	rng     *rand.Rand
	sampler *places.Sampler
	places  []places.Place
	zips    []places.Place
	area    Bounds          // where users start and walk
	grid    *dewey.Grid     // Grid
	tree    *dewey.QuadTree // Quad and Circle
	levels  levels          // Quad and S2: the levels drawn
	users   []user
	n       int
}

// New returns a generator for cfg.
func New(cfg Config) (*Generator, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ps, err := places.Load()
	if err != nil {
		return nil, err
	}
	zs, err := places.LoadZIPs()
	if err != nil {
		return nil, err
	}
	g := &Generator{cfg: cfg, rng: rand.New(rand.NewSource(cfg.Seed)), sampler: places.NewSampler(ps), places: ps, zips: zs}
	// The thesis's spaces keep users in their grid's and tree's box; the
	// s2 space in the places data's extent.
	b := dewey.NewYorkState
	g.area = Bounds{MinLat: b.MinLat, MaxLat: b.MaxLat, MinLng: b.MinLng, MaxLng: b.MaxLng}
	switch cfg.Space {
	case S2:
		g.area = NewYork
		g.levels = newLevels(cfg.MinLevel, cfg.Level)
	case Grid:
		if g.grid, err = dewey.NewGrid(dewey.NewYorkState, cfg.GridSize, cfg.GridSize); err != nil {
			return nil, err
		}
	default:
		depth := cfg.Depth
		if cfg.Space == Circle {
			depth = dewey.MaxGeoDepth
		}
		if g.tree, err = dewey.NewQuadTree(dewey.NewYorkState, depth); err != nil {
			return nil, err
		}
		g.levels = newLevels(max(cfg.MinLevel, 1), cfg.Depth)
	}
	g.users = make([]user, cfg.Users)
	for i := range g.users {
		u := &g.users[i]
		u.uid = "u" + strconv.Itoa(i)
		u.lat, u.lng = g.start()
		u.leaf = g.leaf(u.lat, u.lng)
	}
	return g, nil
}

// Config is the generator's configuration with its defaults filled in.
func (g *Generator) Config() Config { return g.cfg }

// Tree is the quad tree the cells come from (for Quad and Circle; nil
// otherwise).
func (g *Generator) Tree() *dewey.QuadTree { return g.tree }

// start draws a starting point inside the area.
func (g *Generator) start() (lat, lng float64) {
	for {
		if g.rng.Float64() < g.cfg.ZIPShare {
			z := &g.zips[g.rng.Intn(len(g.zips))]
			lat, lng = places.Scatter(g.rng, z.Lat, z.Lng, 0.002)
		} else {
			p := g.sampler.Place(g.rng)
			lat, lng = places.Scatter(g.rng, p.Lat, p.Lng, places.Spread(p.Population))
		}
		if g.area.Contains(lat, lng) {
			return lat, lng
		}
	}
}

// nearest names the populated place closest to a point.
func (g *Generator) nearest(lat, lng float64) string {
	k := math.Cos(lat * math.Pi / 180) // a degree of longitude, in degrees of latitude
	best, name := math.Inf(1), ""
	for i := range g.places {
		p := &g.places[i]
		dy, dx := p.Lat-lat, (p.Lng-lng)*k
		if d := dy*dy + dx*dx; d < best {
			best, name = d, p.Name
		}
	}
	return name
}

// walk moves u until it enters a new cell (at most 64 steps: a user in a
// large cell may stay in it).
func (g *Generator) walk(u *user) {
	deg := g.cfg.Step / 111_320 // metres to degrees of latitude
	for range 64 {
		a := g.rng.Float64() * 2 * math.Pi
		lat := u.lat + deg*math.Sin(a)
		lng := u.lng + deg*math.Cos(a)/math.Cos(u.lat*math.Pi/180)
		if !g.area.Contains(lat, lng) {
			continue
		}
		u.lat, u.lng = lat, lng
		if l := g.leaf(lat, lng); l != u.leaf {
			u.leaf = l
			return
		}
	}
}

// Next returns the next operation, and false once Ops have been made.
func (g *Generator) Next() (Op, bool) {
	if g.n >= g.cfg.Ops {
		return Op{}, false
	}
	at := time.Duration(math.Round(float64(g.n) * float64(time.Second) / g.cfg.Rate))
	g.n++
	u := &g.users[g.rng.Intn(len(g.users))]
	op := Op{At: at, Uid: u.uid, SelfJoin: g.rng.Float64() < g.cfg.SelfJoin}
	if g.rng.Float64() < g.cfg.SubsPerPub/(1+g.cfg.SubsPerPub) {
		g.walk(u)
		op.Kind, op.Past, op.Future = Subscribe, g.cfg.Past, g.cfg.Future
	} else {
		op.Kind, op.Expires = Publish, g.cfg.Expires
		op.Desc = incidents[g.rng.Intn(len(incidents))] + " near " + g.nearest(u.lat, u.lng)
	}
	op.Lat, op.Lng = u.lat, u.lng
	op.Cell, op.RadiusM = g.cell(u)
	return op, true
}

// All returns every operation.
func (g *Generator) All() []Op {
	var ops []Op
	for {
		op, ok := g.Next()
		if !ok {
			return ops
		}
		ops = append(ops, op)
	}
}
