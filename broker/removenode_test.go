package broker

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	cc "github.com/seed84792017/cellcast/client"
)

func postRemove(t *testing.T, b *Broker, method, node string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+b.HTTPAddr()+"/admin/cluster/remove?node="+node, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// misplaced lists the streams not yet on three current replicas, on
// servers other than gone.
func misplaced(ctx context.Context, js jetstream.JetStream, gone string) ([]string, error) {
	var bad []string
	streams := js.ListStreams(ctx)
	n := 0
	for si := range streams.Info() {
		n++
		c := si.Cluster
		if c == nil || c.Leader == "" || c.Leader == gone {
			bad = append(bad, si.Config.Name+": leader "+fmt.Sprint(c))
			continue
		}
		servers, ok := []string{c.Leader}, len(c.Replicas) == 2
		for _, p := range c.Replicas {
			servers = append(servers, p.Name)
			ok = ok && p.Current && !p.Offline && p.Name != gone
		}
		if !ok {
			bad = append(bad, si.Config.Name+": "+strings.Join(servers, ","))
		}
	}
	if err := streams.Err(); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("no streams listed")
	}
	return bad, nil
}

// TestRemoveNode: of four nodes with logs of three replicas, one that
// held replicas is stopped for good and removed through another. Every
// log gets its third replica back on the servers left, the meta group
// counts three servers, so it keeps a leader when one more node stops,
// and the two left serve every shard. A running node, the node asked, a
// node the cluster does not know and a removal that would leave fewer
// servers than replicas are refused.
func TestRemoveNode(t *testing.T) {
	if testing.Short() {
		t.Skip("a four-node cluster")
	}
	brokers := startCluster(t, 4, func(c *ClusterConfig) { c.Replicas = 3 })
	for _, c := range []struct {
		method, node string
		status       int
		says         string
	}{
		{http.MethodGet, "n0", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPost, "", http.StatusBadRequest, "name the node"},
		{http.MethodPost, "n1", http.StatusConflict, "does not remove itself"},
		{http.MethodPost, "n0", http.StatusConflict, "n0 is running"},
		{http.MethodPost, "n9", http.StatusNotFound, "n0, n1, n2, n3"},
	} {
		status, body := postRemove(t, brokers[1], c.method, c.node)
		if status != c.status || !strings.Contains(body, c.says) {
			t.Errorf("%s remove %q: %d %q, want %d and %q", c.method, c.node, status, body, c.status, c.says)
		}
	}

	// A NATS client of the node, not in the system account, cannot ask
	// JetStream to remove a server.
	nc, err := nats.Connect(brokers[1].ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(server.JSApiMetaServerRemoveRequest{Server: "n2"})
	if msg, err := nc.Request(server.JSApiRemoveServer, req, time.Second); err == nil {
		t.Fatalf("a client's peer-remove was answered: %s", msg.Data)
	}
	nc.Close()

	// n0 holds a replica of some logs: with four servers and three
	// replicas, every server holds most of them.
	if _, z := clusterStatus(t, brokers[1], "/clusterz"); fmt.Sprint(z["servers"]) != "[map[name:n0 up:true] map[name:n1 up:true] map[name:n2 up:true] map[name:n3 up:true]]" {
		t.Errorf("/clusterz of four: %v", z["servers"])
	}
	if err := brokers[0].Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Stopped, not removed: still a server of the meta group, down.
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, z := clusterStatus(t, brokers[1], "/clusterz")
		if fmt.Sprint(z["servers"]) == "[map[name:n0 up:false] map[name:n1 up:true] map[name:n2 up:true] map[name:n3 up:true]]" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("/clusterz with n0 stopped: %v", z["servers"])
		}
	}
	var status int
	var body string
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		// Until its route is gone, n0 still counts as running; if it led
		// the meta group, the others elect another leader.
		status, body = postRemove(t, brokers[1], http.MethodPost, "n0")
		if (status != http.StatusConflict && status != http.StatusServiceUnavailable) || time.Now().After(end) {
			break
		}
	}
	if status != http.StatusOK {
		t.Fatalf("removing the stopped n0: %d %q", status, body)
	}
	if _, z := clusterStatus(t, brokers[1], "/clusterz"); fmt.Sprint(z["servers"]) != "[map[name:n1 up:true] map[name:n2 up:true] map[name:n3 up:true]]" {
		t.Errorf("/clusterz after removing n0: %v", z["servers"])
	}
	if status, body := postRemove(t, brokers[2], http.MethodPost, "n0"); status != http.StatusNotFound {
		t.Errorf("removing n0 again: %d %q, want 404", status, body)
	}

	js, err := jetstream.New(brokers[1].nc)
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		bad, err = misplaced(ctx, js, "n0")
		cancel()
		if err == nil && len(bad) == 0 {
			break
		}
	}
	if err != nil || len(bad) > 0 {
		t.Fatalf("logs not moved off n0 onto three current replicas: %v %v", err, bad)
	}
	jz, err := brokers[1].ns.Jsz(&server.JSzOptions{})
	if err != nil || jz.Meta == nil || jz.Meta.Size != 3 {
		t.Fatalf("meta group after removing n0: %+v %v, want 3 servers", jz.Meta, err)
	}

	// Two of the meta group's three servers are a majority: with n1
	// stopped too, n2 and n3 keep a meta leader and serve every shard.
	if err := brokers[1].Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		jz, err := brokers[2].ns.Jsz(&server.JSzOptions{})
		st2, st3 := brokers[2].node.Status(), brokers[3].node.Status()
		led := err == nil && jz.Meta != nil && jz.Meta.Leader != "" && jz.Meta.Leader != "n1"
		// Until n2's route to n1 is gone, n1 counts as running.
		_, z := clusterStatus(t, brokers[2], "/clusterz")
		down := strings.Contains(fmt.Sprint(z["servers"]), "map[name:n1 up:false]")
		if led && down && len(st2.Unserved) == 0 && st2.Owned+st3.Owned == st2.Shards {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("n2 and n3 without n0 and n1: meta %+v, n2 %+v, n3 %+v", jz.Meta, st2, st3)
		}
	}
	// Nor may the three go below the logs' replicas.
	if status, body := postRemove(t, brokers[2], http.MethodPost, "n1"); status != http.StatusConflict || !strings.Contains(body, "add a node first") {
		t.Errorf("removing the stopped n1 of three: %d %q, want 409", status, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var clients []*cc.Client
	for _, b := range brokers[2:] {
		c, err := cc.Dial(ctx, wsURL(b), cc.Options{UID: "u", Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	sub, err := clients[0].Subscribe(ctx, cc.SubscribeRequest{Location: cc.Topic("alerts"), Future: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clients[1].Publish(ctx, cc.PublishRequest{Location: cc.Topic("alerts/fire"), Expires: time.Minute, Desc: "fire"}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-sub.C:
		if n.Publication.Desc != "fire" {
			t.Fatalf("notified of %q, want fire", n.Publication.Desc)
		}
	case <-ctx.Done():
		t.Fatal("no notification on n2 of a publication on n3")
	}
}
