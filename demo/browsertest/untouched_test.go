package browsertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// mark is an incident the page drew, with where its mark is.
type mark struct {
	Pid      string  `json:"pid"`
	Category string  `json:"category"`
	Desc     string  `json:"desc"`
	Lat      float64 `json:"lat"`
	Lng      float64 `json:"lng"`
	RadiusM  float64 `json:"radiusM"`
	LeftMs   float64 `json:"leftMs"`
}

// pickMark is a JS expression: an incident of the page's with at least
// minLeft ms to live and minR metres of radius, whose mark is in the view
// and at least 14 px from every other mark (so that a click at it is
// its), or null.
func pickMark(minLeft, minR int) string {
	return fmt.Sprintf(`(() => {
		const m = demo.map, size = m.getSize(), now = Date.now(), all = [...demo.incidents.values()].filter((i) => i.mark);
		const px = (i) => m.latLngToContainerPoint(i.mark.getLatLng());
		for (const i of all.reverse()) { // the latest first
			const p = px(i), r = i.place.radiusM ?? 0;
			if (i.expires - now < %d || i.place.kind !== "circle" || r < %d) continue;
			if (p.x < 40 || p.y < 40 || p.x > size.x - 40 || p.y > size.y - 40) continue;
			if (all.some((j) => j !== i && px(j).distanceTo(p) < 14)) continue;
			const { lat, lng } = i.mark.getLatLng();
			return { pid: i.pid, category: i.category, desc: i.desc, lat, lng, radiusM: r, leftMs: i.expires - now };
		}
		return null;
	})()`, minLeft, minR)
}

// popupOf is a JS expression: the popup's entry for pid, or null.
func popupOf(pid string) string {
	return fmt.Sprintf(`document.querySelector('.leaflet-popup-content .incident[data-pid=%q]')`, pid)
}

var randomDesc = regexp.MustCompile(`^(accident|fire|flood|roadwork|power outage|gas leak) near \S.*$`)

// TestDemoUntouched: a visitor who touches nothing sees incidents come
// within 10 s (the page publishes at its slider's 2/s from the start),
// and a click on one shows its category, description and time left,
// counting down; a click inside one, as "I am here", shows it too. The
// simulated users, sped up, never leave the land (New York's counties
// and the neighbouring states, by the test's own point-in-polygon).
func TestDemoUntouched(t *testing.T) {
	b := startBroker(t)
	ctx, w := openPage(t, b)
	start := time.Now()
	poll(t, ctx, `demo.incidents.size > 0`, 10*time.Second)
	t.Logf("the first incident drawn %v after the page was ready", time.Since(start).Round(time.Millisecond))
	if r := eval[string](t, ctx, `document.querySelector("#rate-n").textContent + "/" + document.querySelector("#rate").value`); r != "2/2" {
		t.Errorf("random incidents: the page says %s", r)
	}

	// A click on an incident's mark.
	poll(t, ctx, pickMark(6000, 0)+` !== null`, 10*time.Second)
	m := eval[mark](t, ctx, pickMark(6000, 0))
	if !randomDesc.MatchString(m.Desc) || !strings.HasPrefix(m.Desc, m.Category+" ") {
		t.Errorf("a random incident: category %q, description %q", m.Category, m.Desc)
	}
	clickMap(t, ctx, latLng{m.Lat, m.Lng})
	poll(t, ctx, popupOf(m.Pid)+` !== null`, 2*time.Second)
	read := func(field string) string {
		return eval[string](t, ctx, popupOf(m.Pid)+`.querySelector(".`+field+`").textContent`)
	}
	if c, d := read("cat"), read("desc"); c != m.Category || d != m.Desc {
		t.Errorf("the popup says %q, %q; the incident is %q, %q", c, d, m.Category, m.Desc)
	}
	left := read("left")
	if !regexp.MustCompile(`^\d+ s left$`).MatchString(left) {
		t.Errorf("the popup says %q of the time left", left)
	}
	poll(t, ctx, popupOf(m.Pid)+`.querySelector(".left").textContent !== `+fmt.Sprintf("%q", left), 2500*time.Millisecond)
	if n := eval[int](t, ctx, `demo.me.moves`); n != 0 {
		t.Errorf("a click on an incident's mark moved me (%d moves)", n)
	}

	// A click inside a circle, away from its mark: "I am here" there, and
	// the popup lists what holds the point.
	poll(t, ctx, pickMark(8000, 500)+` !== null`, 15*time.Second)
	m = eval[mark](t, ctx, pickMark(8000, 500))
	do(t, ctx, fmt.Sprintf(`demo.map.closePopup(), demo.map.setView([%v, %v], 15, { animate: false })`, m.Lat, m.Lng))
	var inside latLng
	for deg := 0.0; ; deg += 30 {
		if deg == 360 {
			t.Fatalf("no point inside %s clear of every mark", m.Pid)
		}
		inside = destination(latLng{m.Lat, m.Lng}, deg, m.RadiusM*0.6)
		clear := fmt.Sprintf(`(() => { const m = demo.map, p = m.latLngToContainerPoint([%v, %v]);
			return [...demo.incidents.values()].every((i) => !i.mark || m.latLngToContainerPoint(i.mark.getLatLng()).distanceTo(p) > 14); })()`, inside.Lat, inside.Lng)
		if eval[bool](t, ctx, clear) {
			break
		}
	}
	clickMap(t, ctx, inside)
	poll(t, ctx, `demo.me.moves === 1`, 5*time.Second)
	poll(t, ctx, popupOf(m.Pid)+` !== null`, 2*time.Second)
	if d := eval[string](t, ctx, popupOf(m.Pid)+`.querySelector(".desc").textContent`); d != m.Desc {
		t.Errorf("inside the incident, the popup says %q, not %q", d, m.Desc)
	}
	w.check(t)

	// The users, sped up, walk where there is land only.
	land := fetchLand(t, "http://"+b.HTTPAddr()+"/ny.json")
	do(t, ctx, `document.querySelector("#speed").value = 5, document.querySelector("#speed").dispatchEvent(new Event("input"))`)
	time.Sleep(8 * time.Second)
	users := eval[[]latLng](t, ctx, `demo.sim.users.map(({ lat, lng }) => ({ lat, lng }))`)
	wet := 0
	for _, u := range users {
		if !land.holds(u) {
			wet++
			if wet <= 5 {
				t.Errorf("a simulated user is off land at %v", u)
			}
		}
	}
	t.Logf("%d users, %d off land", len(users), wet)
	w.check(t)
}

// polygons are GeoJSON polygons: rings of [lng, lat], shell first.
type polygons [][][][2]float64

// fetchLand reads the land the page serves: New York's counties and the
// neighbouring states.
func fetchLand(t *testing.T, url string) polygons {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	type features struct {
		Features []struct {
			Geometry struct {
				Type        string          `json:"type"`
				Coordinates json.RawMessage `json:"coordinates"`
			} `json:"geometry"`
		} `json:"features"`
	}
	var ny struct{ Counties, Neighbours features }
	if err := json.NewDecoder(resp.Body).Decode(&ny); err != nil {
		t.Fatal(err)
	}
	var out polygons
	for _, f := range append(ny.Counties.Features, ny.Neighbours.Features...) {
		var ps polygons
		if f.Geometry.Type == "Polygon" {
			ps = make(polygons, 1)
			err = json.Unmarshal(f.Geometry.Coordinates, &ps[0])
		} else {
			err = json.Unmarshal(f.Geometry.Coordinates, &ps)
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ps...)
	}
	if len(out) < 69 {
		t.Fatalf("ny.json: %d polygons, want New York's 62 counties and 7 states at least", len(out))
	}
	return out
}

// holds: p is inside a polygon's shell and in none of its holes, by
// counting where a ray eastwards crosses the rings.
func (ps polygons) holds(p latLng) bool {
	in := func(ring [][2]float64) bool {
		odd := false
		for i, j := 0, len(ring)-1; i < len(ring); j, i = i, i+1 {
			a, b := ring[i], ring[j]
			if (a[1] > p.Lat) != (b[1] > p.Lat) && p.Lng < a[0]+(p.Lat-a[1])*(b[0]-a[0])/(b[1]-a[1]) {
				odd = !odd
			}
		}
		return odd
	}
	for _, rings := range ps {
		if in(rings[0]) {
			hole := false
			for _, h := range rings[1:] {
				hole = hole || in(h)
			}
			if !hole {
				return true
			}
		}
	}
	return false
}
