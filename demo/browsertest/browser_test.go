package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seed84792017/cellcast/broker"
	"github.com/seed84792017/cellcast/dewey"
	"github.com/seed84792017/cellcast/geo"
	"github.com/seed84792017/cellcast/listdb"
)

// slack allows for float noise between the broker's S2 chord angles and
// the haversine formula: a hundredth of a millimetre would do; half a
// metre hides no error that matters.
const slack = 0.5

var (
	timesSquare  = latLng{40.758, -73.9855}
	hotelDeVille = latLng{48.8566, 2.3522}
)

// meState is "me" as the page holds it.
type meState struct {
	Sid     string   `json:"sid"`
	Cell    string   `json:"cell"`
	Cover   []string `json:"cover"`
	Lat     float64  `json:"lat"`
	Lng     float64  `json:"lng"`
	RadiusM float64  `json:"radiusM"`
	Moves   int      `json:"moves"`
}

func (m meState) at() latLng { return latLng{m.Lat, m.Lng} }

func readMe(t *testing.T, ctx context.Context) meState {
	t.Helper()
	return eval[meState](t, ctx, `(({ sid, cell, cover, lat, lng, radiusM, moves }) => ({ sid, cell, cover, lat, lng, radiusM, moves }))(demo.me)`)
}

// entry is one line of My alerts: the publication the broker sent, and
// what the page measured and wrote.
type entry struct {
	Pub struct {
		Pid     string   `json:"pid"`
		Uid     string   `json:"uid"`
		Desc    string   `json:"desc"`
		Lat     *float64 `json:"lat"`
		Lng     *float64 `json:"lng"`
		RadiusM *float64 `json:"radius_m"`
		Polygon *struct {
			Type        string          `json:"type"`
			Coordinates json.RawMessage `json:"coordinates"`
		} `json:"polygon"`
	} `json:"pub"`
	CentreM *float64 `json:"centreM"`
	EdgeM   *float64 `json:"edgeM"`
	Inside  bool     `json:"inside"`
	Label   string   `json:"label"`
}

// checkAlerts checks every entry of My alerts against the rule, computed
// here: a circle is listed when the distance between its centre and mine
// is at most my radius plus its radius, a polygon when it comes within my
// radius of my centre. For circles the page's distances must be the
// haversine ones. It returns the entries by pid.
func checkAlerts(t *testing.T, ctx context.Context) (meState, map[string]entry) {
	t.Helper()
	m := readMe(t, ctx)
	es := eval[[]entry](t, ctx, `demo.panel.entries()`)
	byPid := map[string]entry{}
	for _, e := range es {
		p := e.Pub
		byPid[p.Pid] = e
		switch {
		case p.Polygon != nil:
			var rings [][][2]float64
			if p.Polygon.Type != "Polygon" || json.Unmarshal(p.Polygon.Coordinates, &rings) != nil {
				t.Errorf("alert %s: polygon %s", p.Pid, p.Polygon.Coordinates)
				continue
			}
			if d := polygonDistanceM(m.at(), rings); d > m.RadiusM+slack {
				t.Errorf("alert %s (%s): a polygon %.1f m from me, beyond my %.0f m", p.Pid, p.Desc, d, m.RadiusM)
			}
		case p.Lat != nil:
			r := 0.0
			if p.RadiusM != nil {
				r = *p.RadiusM
			}
			d := haversineM(m.at(), latLng{*p.Lat, *p.Lng})
			if d > m.RadiusM+r+slack {
				t.Errorf("alert %s (%s): centres %.1f m apart, more than my %.0f m + its %.0f m", p.Pid, p.Desc, d, m.RadiusM, r)
			}
			if e.CentreM == nil || math.Abs(*e.CentreM-d) > 0.01 || e.EdgeM == nil || math.Abs(*e.EdgeM-max(0, d-r)) > 0.01 || e.Inside != (d <= r) {
				t.Errorf("alert %s: the page measured centre %v, edge %v, inside %v; haversine gives %.2f m, edge %.2f m", p.Pid, e.CentreM, e.EdgeM, e.Inside, d, max(0, d-r))
			}
			switch {
			case r == 0: // a point: "… away"
			case d <= r && !strings.HasPrefix(e.Label, "inside"):
				t.Errorf("alert %s: label %q, but I am inside it", p.Pid, e.Label)
			case d > r && !strings.Contains(e.Label, "to edge"):
				t.Errorf("alert %s: label %q, without the distance to its edge", p.Pid, e.Label)
			}
		}
	}
	return m, byPid
}

// checkGrid checks the grid the page draws against the broker's grid:
// the cell of the view's centre, at the level the page chose, is among
// the cells drawn, with the corners geo gives, and about 48 px across.
func checkGrid(t *testing.T, ctx context.Context) int {
	t.Helper()
	poll(t, ctx, `demo.grid.level !== null && demo.grid.center && demo.map.getCenter().distanceTo(demo.grid.center) < 1`, 10*time.Second)
	g := eval[gridState](t, ctx, `(() => {
		const m = demo.map, c = m.getCenter(), p = m.latLngToContainerPoint(c);
		return { level: demo.grid.level, center: demo.grid.center, mPerPx: m.distance(c, m.containerPointToLatLng([p.x + 100, p.y])) / 100,
			cells: demo.grid.fine.map(({ id, corners }) => ({ id, corners })) };
	})()`)
	id, err := geo.PointCell(g.Center.Lat, g.Center.Lng, g.Level)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range g.Cells {
		if c.ID == id.String() {
			found = true
			checkCorners(t, c)
			if px := haversineM(c.Corners[0], c.Corners[1]) / g.MPerPx; px < 16 || px > 150 {
				t.Errorf("grid level %d: the centre's cell is %.0f px wide", g.Level, px)
			}
		}
	}
	if !found || len(g.Cells) < 10 {
		t.Fatalf("grid level %d at %v: %d cells drawn, the centre's cell %s among them: %v", g.Level, g.Center, len(g.Cells), id, found)
	}
	return g.Level
}

type gridState struct {
	Level  int     `json:"level"`
	Center latLng  `json:"center"`
	MPerPx float64 `json:"mPerPx"`
	Cells  []cell  `json:"cells"`
}

type cell struct {
	ID      string   `json:"id"`
	Corners []latLng `json:"corners"`
}

// checkCorners: a cell the page drew has the corners geo gives it.
func checkCorners(t *testing.T, c cell) {
	t.Helper()
	id, err := dewey.Parse(c.ID)
	if err != nil {
		t.Fatal(err)
	}
	want, err := geo.CellBounds(id)
	if err != nil || len(c.Corners) != 4 {
		t.Fatalf("cell %s: %d corners, %v", c.ID, len(c.Corners), err)
	}
	for k, w := range want {
		if math.Abs(c.Corners[k].Lat-w[0]) > 1e-9 || math.Abs(c.Corners[k].Lng-w[1]) > 1e-9 {
			t.Fatalf("cell %s corner %d: page %v, geo %v", c.ID, k, c.Corners[k], w)
		}
	}
}

// checkCover: the cells drawn around me are the cover the broker
// replied with, outlined as geo outlines them, all on face.
func checkCover(t *testing.T, ctx context.Context, m meState, face string) {
	t.Helper()
	poll(t, ctx, fmt.Sprintf(`demo.me.layers.getLayers().length === %d`, len(m.Cover)+2), 5*time.Second)
	ids, _ := json.Marshal(m.Cover)
	for _, c := range eval[[]cell](t, ctx, fmt.Sprintf(`demo.cells.of(%s).then((cs) => cs.map(({ id, corners }) => ({ id, corners })))`, ids)) {
		checkCorners(t, c)
		if !strings.HasPrefix(c.ID+".", face+".") {
			t.Errorf("my cover cell %s is not on face %s", c.ID, face)
		}
	}
	if m.Cell != m.Cover[0] {
		t.Errorf("my cell %s, cover %v", m.Cell, m.Cover)
	}
}

func faceOf(t *testing.T, p latLng) string {
	id, err := geo.PointCell(p.Lat, p.Lng, 0)
	if err != nil {
		t.Fatal(err)
	}
	return id.String()
}

// listed is a JS expression: how many alerts list pid.
func listed(pid string) string {
	return fmt.Sprintf(`document.querySelectorAll('#alerts li[data-pid=%q]').length`, pid)
}

// nearAndFar publishes, from outside the page, an incident 500 m from me
// (radius 100 m), which must be listed, and one 5 km away (radius 300 m),
// which must not be, though the page's watch hears it.
func nearAndFar(t *testing.T, ctx context.Context, b *broker.Broker, m meState, city string) (near, far string) {
	t.Helper()
	pub := func(p latLng, r float64, what string) string {
		rep := publish(t, b, map[string]any{"uid": "outsider", "lat": p.Lat, "lng": p.Lng, "radius_m": r, "expires": "2m", "desc": what + " in " + city, "attrs": map[string]string{"category": "accident"}})
		return rep["pid"].(string)
	}
	sent := time.Now()
	near = pub(destination(m.at(), 0, 500), 100, "near")
	far = pub(destination(m.at(), 90, 5000), 300, "far")
	poll(t, ctx, listed(near)+` === 1`, 2*time.Second)
	t.Logf("%s: the near alert shown %v after its publish", city, time.Since(sent).Round(time.Millisecond))
	poll(t, ctx, fmt.Sprintf(`demo.incidents.byPid.has(%q) && demo.incidents.byPid.has(%q)`, near, far), 2*time.Second)
	// Drawn as its true circle: its centre, its radius in metres.
	drawn := eval[struct {
		C latLng  `json:"c"`
		R float64 `json:"r"`
	}](t, ctx, fmt.Sprintf(`(({ layer }) => ({ c: layer.getLatLng(), r: layer.getRadius() }))(demo.incidents.byPid.get(%q))`, near))
	if want := destination(m.at(), 0, 500); drawn.R != 100 || haversineM(drawn.C, want) > 0.01 {
		t.Errorf("%s: the near incident is drawn as a circle of %v m at %v, published at %v", city, drawn.R, drawn.C, want)
	}
	time.Sleep(300 * time.Millisecond) // room for a wrong alert to arrive
	if n := eval[int](t, ctx, listed(far)); n != 0 {
		t.Fatalf("%s: the incident 5 km away is listed in My alerts", city)
	}
	_, es := checkAlerts(t, ctx)
	if l := es[near].Label; l != "400 m to edge · 500 m to centre" {
		t.Errorf("%s: the near alert says %q", city, l)
	}
	return near, far
}

// TestDemoInChromium: the page loads from the broker alone, draws the
// world, New York and the broker's grid, and connects. "I am here" in New
// York lists what meets my circle and nothing else, with haversine
// distances; a move lists nothing twice and drops what no longer
// concerns me; an incident leaves at expiry. Paris works the same. A zone
// published from the page is drawn as its polygon, and clicking it says
// what, who and how long. Charts and the query box work, nothing leaves
// the broker's host, and the page logs no error.
func TestDemoInChromium(t *testing.T) {
	b := startBroker(t)
	ctx, w := openPage(t, b)

	if n := eval[int](t, ctx, `document.querySelectorAll("path.county").length`); n < 60 {
		t.Fatalf("%d county outlines drawn, want New York's 62", n)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("path.land, path.border").length`); n != 2 {
		t.Fatalf("%d world layers drawn, want the land and the borders", n)
	}
	// New York's neighbours are land, at New York's scale, on the sea
	// around New York City (the world's coarse land fills its bays).
	if n := eval[string](t, ctx, `document.querySelectorAll("path.neighbour").length + "/" + document.querySelectorAll("path.sea, path.state-border").length`); n != "7/2" {
		t.Fatalf("neighbouring states and the sea around them drawn: %s, want 7/2", n)
	}
	checkGrid(t, ctx)
	painted := `(() => { const c = document.querySelector("canvas.overlay"), d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data; let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; })()`
	if n := eval[int](t, ctx, painted); n < 1000 {
		t.Fatalf("the grid and place names painted %d pixels", n)
	}
	// The page starts publishing at the rate its slider shows.
	if r := eval[string](t, ctx, `document.querySelector("#rate-n").textContent + "/" + document.querySelector("#rate").value`); r != "2/2" {
		t.Errorf("random incidents: the page says %s", r)
	}
	// Quiet the simulation, so that the alerts are mostly the test's own.
	do(t, ctx, `demo.setRate(0), demo.setUsers(10), demo.map.setView([40.758, -73.9855], 14, { animate: false })`)
	choose(t, ctx, "#me-radius", "1000")

	// (a) New York.
	click(t, ctx, `button[data-mode="me"]`)
	clickMap(t, ctx, timesSquare)
	poll(t, ctx, `demo.me.moves === 1`, 5*time.Second)
	m1 := readMe(t, ctx)
	checkCover(t, ctx, m1, faceOf(t, timesSquare))
	near, far := nearAndFar(t, ctx, b, m1, "New York")

	// A wide incident that concerns me here and 5 km west; short-lived.
	wide := publish(t, b, map[string]any{"uid": "outsider", "lat": m1.Lat, "lng": m1.Lng, "radius_m": 7000, "expires": "15s", "desc": "water main break", "attrs": map[string]string{"category": "flood"}})
	widePid := wide["pid"].(string)
	poll(t, ctx, listed(widePid)+` === 1`, 2*time.Second)
	west := destination(m1.at(), 270, 5000)
	do(t, ctx, fmt.Sprintf(`demo.map.setView([%v, %v], 14, { animate: false })`, west.Lat, west.Lng))
	clickMap(t, ctx, west)
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](`demo.me.moves === 2`, chromedp.WithPollingTimeout(5*time.Second))); err != nil {
		t.Fatalf("moving me 5 km west: %v; the page says %q", err, eval[string](t, ctx, `document.querySelector("#me-msg").textContent`))
	}
	m2 := readMe(t, ctx)
	for _, a := range m1.Cover {
		for _, c := range m2.Cover {
			if x, y := dewey.MustParse(a), dewey.MustParse(c); dewey.Overlaps(x, y) {
				t.Fatalf("my covers before and after the move overlap (%s, %s): the move does not test self-join", a, c)
			}
		}
	}
	time.Sleep(500 * time.Millisecond) // room for a repeat to arrive
	if n := eval[int](t, ctx, listed(widePid)); n != 1 {
		t.Fatalf("the wide incident is listed %d times after the move", n)
	}
	// The new subscription's self-join leaves out what the earlier one
	// already returned, though their cells do not overlap, so the page
	// has nothing to drop (docs/demo.md).
	if n := eval[int](t, ctx, `demo.panel.repeats`); n != 0 {
		t.Fatalf("the broker sent %d alert(s) again after the move", n)
	}
	if n := eval[int](t, ctx, listed(near)+" + "+listed(far)); n != 0 {
		t.Fatalf("after moving 5 km, the near and far incidents are still listed")
	}
	checkAlerts(t, ctx)
	expires, err := time.Parse(time.RFC3339Nano, wide["expires_at"].(string))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(expires))
	poll(t, ctx, fmt.Sprintf(`!demo.incidents.byPid.has(%q) && %s === 0`, widePid, listed(widePid)), 2500*time.Millisecond)

	// (b) Paris, moved to with the page's "go to" list.
	choose(t, ctx, "#goto", "Paris")
	level := checkGrid(t, ctx)
	t.Logf("Paris: grid level %d", level)
	do(t, ctx, fmt.Sprintf(`demo.map.setView([%v, %v], 14, { animate: false })`, hotelDeVille.Lat, hotelDeVille.Lng))
	clickMap(t, ctx, hotelDeVille)
	poll(t, ctx, `demo.me.moves === 3`, 5*time.Second)
	m3 := readMe(t, ctx)
	checkCover(t, ctx, m3, faceOf(t, hotelDeVille))
	if n := eval[int](t, ctx, `demo.panel.entries().filter((e) => e.pub.lat < 45).length`); n != 0 {
		t.Fatalf("in Paris, %d alerts from New York are still listed", n)
	}
	nearAndFar(t, ctx, b, m3, "Paris")

	// (c) A square zone published from the page, 1.2 km east of me: it
	// meets my circle, is drawn as its polygon, and a click on it tells
	// what, who and how long.
	click(t, ctx, `button[data-mode="publish"]`)
	choose(t, ctx, "#inc-shape", "square")
	choose(t, ctx, "#inc-radius", "500")
	choose(t, ctx, "#inc-cat", "gas leak")
	choose(t, ctx, "#inc-life", "120")
	desc := fmt.Sprintf("evacuation %d", time.Now().UnixNano()%1e6)
	do(t, ctx, fmt.Sprintf(`document.querySelector("#inc-desc").value = %q`, desc))
	clickMap(t, ctx, destination(m3.at(), 90, 1200))
	poll(t, ctx, `demo.published !== null`, 5*time.Second)
	zone := eval[string](t, ctx, `demo.published.pid`)
	poll(t, ctx, fmt.Sprintf(`demo.incidents.byPid.get(%q)?.layer != null`, zone), 2*time.Second)
	poll(t, ctx, listed(zone)+` === 1`, 2*time.Second)
	_, es := checkAlerts(t, ctx)
	var rings [][][2]float64
	if p := es[zone].Pub.Polygon; p == nil || json.Unmarshal(p.Coordinates, &rings) != nil || len(rings) != 1 || len(rings[0]) != 5 {
		t.Fatalf("the zone's alert: %+v", es[zone].Pub)
	}
	v := func(i int) latLng { return latLng{rings[0][i][1], rings[0][i][0]} }
	if d1, d2 := haversineM(v(0), v(2)), haversineM(v(1), v(3)); math.Abs(d1-1000) > 1 || math.Abs(d2-1000) > 1 {
		t.Fatalf("the square's diagonals are %.1f and %.1f m, want 1000", d1, d2)
	}
	drawn := eval[[]latLng](t, ctx, fmt.Sprintf(`demo.incidents.byPid.get(%q).layer.getLatLngs()[0][0].map(({ lat, lng }) => ({ lat, lng }))`, zone))
	if len(drawn) != 4 {
		t.Fatalf("the zone is drawn with %d vertices: %v", len(drawn), drawn)
	}
	for i, p := range drawn {
		if haversineM(p, v(i)) > 0.01 {
			t.Fatalf("the zone's vertex %d is drawn at %v, published at %v", i, p, v(i))
		}
	}
	clickMap(t, ctx, latLng{(v(0).Lat + v(2).Lat) / 2, (v(0).Lng + v(2).Lng) / 2})
	popup := fmt.Sprintf(`document.querySelector('.leaflet-popup-content .incident[data-pid=%q]')`, zone)
	poll(t, ctx, popup+` !== null`, 2*time.Second)
	text := eval[string](t, ctx, popup+`.textContent`)
	uid := es[zone].Pub.Uid
	for _, want := range []string{"gas leak", desc, "by " + uid, " s left", "polygon of 4 vertices"} {
		if !strings.Contains(text, want) {
			t.Errorf("the zone's popup says %q, without %q", text, want)
		}
	}
	left := eval[string](t, ctx, popup+`.querySelector(".left").textContent`)
	time.Sleep(2100 * time.Millisecond) // the page counts down once a second
	if now := eval[string](t, ctx, popup+`.querySelector(".left").textContent`); now == left {
		t.Errorf("time left does not count down: %q after two seconds", now)
	}
	if p := eval[string](t, ctx, `demo.published.pid`); p != zone {
		t.Errorf("clicking the zone published another incident (%s)", p)
	}

	// Charts and the query box.
	poll(t, ctx, `demo.charts.data[0][0].length >= 2 && demo.charts.latest.live > 0`, 5*time.Second)
	checkPanel(t, ctx)
	choose(t, ctx, "#q-attr", "category")
	do(t, ctx, `document.querySelector("#q-eq").value = "gas leak"`)
	click(t, ctx, `#query button`)
	poll(t, ctx, fmt.Sprintf(`[...document.querySelectorAll("#qresults li")].some((li) => li.textContent.includes(%q) && li.textContent.includes("a zone around"))`, desc), 3*time.Second)

	if bad, n := w.elsewhere(b.HTTPAddr()); len(bad) > 0 || n < 5 {
		t.Fatalf("of %d requests, these left the broker's host: %v", n, bad)
	}
	if w.asked("/cells?box=") == 0 || w.asked("/cells?ids=") == 0 {
		t.Fatalf("the page drew the grid and my cover without asking /cells")
	}
	w.check(t)
	if *shots != "" {
		demoShot(t, ctx)
		w.check(t)
	}
}

// demoShot takes the README's pictures: New York City with moving users,
// incidents and the viewer's alerts; then the charts and a query.
func demoShot(t *testing.T, ctx context.Context) {
	click(t, ctx, `button[data-mode="me"]`)
	choose(t, ctx, "#goto", "New York")
	do(t, ctx, `demo.map.setView([40.74, -73.95], 11.5, { animate: false }), demo.setUsers(1000), demo.setRate(10)`)
	choose(t, ctx, "#me-radius", "3000")
	clickMap(t, ctx, latLng{40.74, -73.99})
	time.Sleep(8 * time.Second)
	// An incident's popup, as a click on its dot opens it.
	if eval[bool](t, ctx, pickMark(5000, 0)+` !== null`) {
		m := eval[mark](t, ctx, pickMark(5000, 0))
		clickMap(t, ctx, latLng{m.Lat, m.Lng})
		poll(t, ctx, popupOf(m.Pid)+` !== null`, 2*time.Second)
	}
	screenshot(t, ctx, "demo.png")
	do(t, ctx, `document.querySelector("#q-eq").value = "fire", document.querySelector("#query button").click()`)
	time.Sleep(1500 * time.Millisecond)
	do(t, ctx, `document.querySelector("aside").scrollTop = 1e6`)
	screenshot(t, ctx, "demo-charts.png")
	t.Logf("screenshots written to %s", *shots)
}

// TestNoTokenAsksForOne: under auth, the page asks for a token instead of
// failing; the right one connects it.
func TestNoTokenAsksForOne(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("demo-token-0123456789 alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := broker.Start(broker.Config{DataDir: dir, HTTPAddr: "127.0.0.1:0", NATSListen: "127.0.0.1:0", TokensFile: tokens,
		Durability: listdb.Written, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Shutdown(context.Background())
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+b.HTTPAddr()+"/")); err != nil {
		t.Fatal(err)
	}
	poll(t, ctx, `!document.querySelector("#auth").hidden`, 10*time.Second)
	do(t, ctx, `document.querySelector("#token").value = "demo-token-0123456789"`)
	click(t, ctx, `#auth button`)
	poll(t, ctx, `document.body.dataset.ready === "1" && document.body.dataset.ws === "open"`, 10*time.Second)
	if s := eval[string](t, ctx, `document.querySelector("#status").textContent`); strings.HasPrefix(s, "error") {
		t.Fatal(s)
	}
}
