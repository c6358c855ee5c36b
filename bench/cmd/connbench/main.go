// Command connbench measures what an idle WebSocket connection holding one
// subscription costs the broker: it opens N real connections, spread over
// several loopback source addresses so the client side does not run out
// of ports, subscribes each once, and reads the broker's RSS idle and
// while 50 publications a second reach every connection. It does the same
// against a nats-server process (a NATS client per connection with one
// subscription) in the same run and prints both per connection. The
// subscriptions are on world-grid cells under midtown Manhattan's cell of
// S2 level 10, the publications on that cell.
//
//	go run ./bench/cmd/connbench -n 1000,5000,15000
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/bench/procs"
	"github.com/seed84792017/cellcast/geo"
)

var (
	counts    = flag.String("n", "1000,5000,15000", "connection counts, comma-separated")
	brokerBin = flag.String("broker", "", "broker binary (default: build ./cmd/broker)")
	natsBin   = flag.String("nats-server", "", "nats-server binary (default .tools/nats-server, then $PATH; \"none\" skips NATS)")
	pubRate   = flag.Int("rate", 50, "publications per second in the busy phase, each reaching every connection")
	busy      = flag.Duration("busy", 5*time.Second, "length of the busy phase")
	sources   = flag.Int("sources", 16, "loopback source addresses the clients dial from")
	storm     = flag.Int("storm", 1000, "connections dialled at once")
	hold      = flag.Duration("hold", 0, "keep the broker's connections idle this long before the busy phase, e.g. to take its profiles (it runs with --pprof)")
)

func main() {
	flag.Parse()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "connbench:", err)
		os.Exit(1)
	}
}

// midtown is the world grid's cell of S2 level 10 (about 10 km) holding
// Times Square, where every connection's subscription lies.
var midtown = func() string {
	id, err := geo.PointCell(40.758, -73.9855, 10)
	if err != nil {
		panic(err)
	}
	return id.String()
}()

type result struct {
	system              string
	n                   int
	base, idle, busyMax float64 // RSS MiB
	delivered, owed     int64
	connect             time.Duration // from the first dial to the last subscription in place
	refusedPubs         int64         // publications refused as overloaded
}

func run() error {
	dir, err := os.MkdirTemp("", "connbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	broker, err := procs.Broker(*brokerBin, dir)
	if err != nil {
		return err
	}
	natsServer := ""
	if *natsBin != "none" {
		if natsServer, err = procs.NATSServer(*natsBin); err != nil {
			return err
		}
	}
	var results []result
	for _, s := range strings.Split(*counts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return fmt.Errorf("bad count %q", s)
		}
		r, err := runBroker(broker, filepath.Join(dir, "data-"+s), n)
		if err != nil {
			return err
		}
		results = append(results, r)
		if natsServer != "" {
			r, err := runNATS(natsServer, n)
			if err != nil {
				return err
			}
			results = append(results, r)
		}
	}
	fmt.Printf("%d dialled at once\n\n", *storm)
	fmt.Println("| system | connections | connected and subscribed in | RSS MiB (empty, idle, busy peak) | KiB per connection idle | KiB per connection busy | vs nats-server idle | delivered in the busy phase |")
	fmt.Println("|---|---:|---:|---|---:|---:|---:|---|")
	var natsIdle = map[int]float64{}
	for _, r := range results {
		if r.system == "nats-server" {
			natsIdle[r.n] = perConn(r.idle, r.base, r.n)
		}
	}
	for _, r := range results {
		idle, busy := perConn(r.idle, r.base, r.n), perConn(r.busyMax, r.base, r.n)
		ratio := "—"
		if v := natsIdle[r.n]; v > 0 {
			ratio = fmt.Sprintf("%.2f×", idle/v)
		}
		refused := ""
		if r.refusedPubs > 0 {
			refused = fmt.Sprintf(" (%d publications refused as overloaded)", r.refusedPubs)
		}
		fmt.Printf("| %s | %d | %.1f s | %.0f, %.0f, %.0f | %.1f | %.1f | %s | %d of %d%s |\n", r.system, r.n, r.connect.Seconds(), r.base, r.idle, r.busyMax,
			idle, busy, ratio, r.delivered, r.owed, refused)
	}
	return nil
}

func perConn(rss, base float64, n int) float64 { return (rss - base) * 1024 / float64(n) }

// rssMiB reads a process's resident set.
func rssMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			kb, _ := strconv.ParseFloat(strings.Fields(l)[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// settle waits for the RSS to stop moving.
func settle(pid int) float64 {
	last := rssMiB(pid)
	for range 20 {
		time.Sleep(500 * time.Millisecond)
		now := rssMiB(pid)
		if now-last < 0.5 && last-now < 0.5 {
			return now
		}
		last = now
	}
	return last
}

// dialStorm runs connect for 0…n-1, -storm at a time, and says how long
// they all took, or the first error.
func dialStorm(n int, connect func(i int) error) (time.Duration, error) {
	var wg sync.WaitGroup
	errc := make(chan error, n)
	sem := make(chan struct{}, *storm)
	t0 := time.Now()
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := connect(i); err != nil {
				errc <- err
			}
		}()
	}
	wg.Wait()
	close(errc)
	return time.Since(t0), <-errc
}

// dialer dials from the i-th loopback source address.
func dialer(i int) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(1+i%*sources))}, Timeout: 30 * time.Second}
}

func runBroker(bin, data string, n int) (result, error) {
	httpAddr, err := procs.FreeAddr()
	if err != nil {
		return result{}, err
	}
	natsAddr, err := procs.FreeAddr()
	if err != nil {
		return result{}, err
	}
	cmd := exec.Command(bin, "--data", data, "--http", httpAddr, "--nats-listen", natsAddr, "--log-level", "warn", "--pprof")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	defer procs.Stop(cmd)
	if err := procs.WaitReady(httpAddr); err != nil {
		return result{}, err
	}
	r := result{system: "cellcast", n: n, base: settle(cmd.Process.Pid)}
	var received atomic.Int64
	conns := make([]*websocket.Conn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	r.connect, err = dialStorm(n, func(i int) error {
		d := websocket.Dialer{NetDialContext: dialer(i).DialContext, HandshakeTimeout: 30 * time.Second}
		c, _, err := d.Dial("ws://"+httpAddr+"/ws", nil)
		if err != nil {
			return err
		}
		conns[i] = c
		// One subscription in one of the 64 cells of S2 level 13 under
		// midtown's cell of level 10; publications on that cell reach
		// every one.
		req := fmt.Sprintf(`{"id":"s","op":"subscribe","uid":"u%d","cell":"%s.%d.%d.%d","future":"1h"}`, i, midtown, 1+i%4, 1+i/4%4, 1+i/16%4)
		if err := c.WriteMessage(websocket.TextMessage, []byte(req)); err != nil {
			return err
		}
		_, m, err := c.ReadMessage()
		if err != nil || !strings.Contains(string(m), `"subscribed"`) {
			return fmt.Errorf("subscribe: %s %v", m, err)
		}
		go func() {
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					return
				}
				received.Add(1)
			}
		}()
		return nil
	})
	if err != nil {
		return result{}, fmt.Errorf("%d connections: %w", n, err)
	}
	r.idle = settle(cmd.Process.Pid)
	if *hold > 0 {
		fmt.Fprintf(os.Stderr, "%d idle connections on http://%s/debug/pprof/ for %v\n", n, httpAddr, *hold)
		time.Sleep(*hold)
	}
	pub, _, err := websocket.DefaultDialer.Dial("ws://"+httpAddr+"/ws", nil)
	if err != nil {
		return result{}, err
	}
	defer pub.Close()
	var accepted, answered atomic.Int64 // publications published, replies read
	go func() {
		for {
			_, m, err := pub.ReadMessage()
			if err != nil {
				return
			}
			if strings.Contains(string(m), `"published"`) {
				accepted.Add(1)
			}
			answered.Add(1)
		}
	}()
	var sent int64
	r.busyMax, _ = busyPhase(cmd.Process.Pid, n, func(k int) error {
		sent++
		return pub.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `{"id":"%d","op":"publish","uid":"p","cell":%q,"expires":"1m","desc":"an incident for everyone"}`, k, midtown))
	})
	waitFor(&answered, sent)
	r.refusedPubs = sent - accepted.Load() // overloaded: the delivery backlog was full
	r.owed = accepted.Load() * int64(n)
	r.delivered = waitFor(&received, r.owed)
	return r, nil
}

// busyPhase publishes at -rate for -busy and samples the RSS.
func busyPhase(pid, n int, publish func(k int) error) (peak float64, owed int64) {
	start := time.Now()
	every := time.Second / time.Duration(*pubRate)
	for k := 0; time.Since(start) < *busy; k++ {
		time.Sleep(time.Until(start.Add(time.Duration(k) * every)))
		if err := publish(k); err != nil {
			break
		}
		owed += int64(n)
		if k%10 == 0 {
			peak = max(peak, rssMiB(pid))
		}
	}
	return max(peak, rssMiB(pid)), owed
}

// waitFor waits until want messages arrived or none arrive for 3 s.
func waitFor(got *atomic.Int64, want int64) int64 {
	last, since := got.Load(), time.Now()
	for got.Load() < want && time.Since(since) < 3*time.Second {
		time.Sleep(100 * time.Millisecond)
		if n := got.Load(); n != last {
			last, since = n, time.Now()
		}
	}
	return got.Load()
}

func runNATS(bin string, n int) (result, error) {
	addr, err := procs.FreeAddr()
	if err != nil {
		return result{}, err
	}
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "-a", host, "-p", port)
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	defer procs.Stop(cmd)
	if err := procs.WaitTCP(addr); err != nil {
		return result{}, err
	}
	r := result{system: "nats-server", n: n, base: settle(cmd.Process.Pid)}
	var received atomic.Int64
	conns := make([]*nats.Conn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	r.connect, err = dialStorm(n, func(i int) error {
		c, err := nats.Connect("nats://"+addr, nats.SetCustomDialer(dialer(i)), nats.MaxReconnects(0))
		if err != nil {
			return err
		}
		conns[i] = c
		// One subscription, which publications on a cell under midtown's
		// reach.
		if _, err := c.Subscribe("cell."+midtown+".>", func(*nats.Msg) { received.Add(1) }); err != nil {
			return err
		}
		return c.Flush()
	})
	if err != nil {
		return result{}, fmt.Errorf("%d NATS connections: %w", n, err)
	}
	r.idle = settle(cmd.Process.Pid)
	pub, err := nats.Connect("nats://" + addr)
	if err != nil {
		return result{}, err
	}
	defer pub.Close()
	body := fmt.Appendf(nil, `{"op":"notification","sid":"x","seq":1,"publication":{"pid":"p","cell":%q,"desc":"an incident for everyone"}}`, midtown)
	r.busyMax, r.owed = busyPhase(cmd.Process.Pid, n, func(int) error { return pub.Publish("cell."+midtown+".1", body) })
	pub.Flush()
	r.delivered = waitFor(&received, r.owed)
	return r, nil
}
