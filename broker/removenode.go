package broker

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/seed84792017/cellcast/cluster"
)

// removeError is why a node cannot be removed, with the HTTP status that
// says so.
type removeError struct {
	status int
	msg    string
}

func (e *removeError) Error() string { return e.msg }

// serveRemoveNode is POST /admin/cluster/remove?node=ID: it removes a
// stopped node's NATS server from the JetStream cluster for good. The
// meta group then no longer counts it towards its majority, and every
// shard log it held a replica of gets a replica on another server
// (JetStream moves them). Without it a node stopped for good stays an
// offline peer, and one of the first --replicas nodes leaves its logs a
// replica short.
func (b *Broker) serveRemoveNode(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed: POST /admin/cluster/remove?node=ID", http.StatusMethodNotAllowed)
		return
	}
	node := r.URL.Query().Get("node")
	err := b.removeNode(node)
	var re *removeError
	switch {
	case err == nil:
		b.log.Info("removed a node from the JetStream cluster", "node", node)
		fmt.Fprintf(w, "removed %s: the JetStream cluster no longer counts it, and the logs it held a replica of are getting one on another server\n", node)
	case errors.As(err, &re):
		http.Error(w, strings.ToLower(http.StatusText(re.status))+": "+re.msg, re.status)
	default:
		b.log.Error("removing a node", "node", node, "err", err)
		http.Error(w, "internal: "+err.Error(), http.StatusInternalServerError)
	}
}

// removeNode checks that node may go, then asks the JetStream meta
// leader, from the system account, to remove its server.
func (b *Broker) removeNode(node string) error {
	switch {
	case b.node == nil:
		return &removeError{http.StatusConflict, "this broker is not a cluster node"}
	case b.ns == nil || b.natsSystem == "":
		return &removeError{http.StatusConflict, "this node's NATS cluster is external: remove the server there (nats server raft peer-remove, from the system account)"}
	case node == "":
		return &removeError{http.StatusBadRequest, "name the node to remove: ?node=ID"}
	case node == b.cfg.Cluster.Node:
		return &removeError{http.StatusConflict, "a node does not remove itself: stop it, then ask another node"}
	}
	if err := b.checkRemovable(node); err != nil {
		return err
	}
	nc, err := nats.Connect("nats://in-process", nats.InProcessServer(b.ns), nats.Token(b.natsSystem), nats.Name("cellcast-system"))
	if err != nil {
		return fmt.Errorf("connecting to the system account: %w", err)
	}
	defer nc.Close()
	req, _ := json.Marshal(server.JSApiMetaServerRemoveRequest{Server: node})
	msg, err := nc.Request(server.JSApiRemoveServer, req, 10*time.Second)
	if errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) {
		return &removeError{http.StatusServiceUnavailable, "no JetStream meta leader answered: try again once the cluster has one"}
	}
	if err != nil {
		return err
	}
	var resp server.JSApiMetaServerRemoveResponse
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return fmt.Errorf("the meta leader's answer %q: %w", msg.Data, err)
	}
	if e := resp.Error; e != nil {
		status := http.StatusBadGateway
		switch server.ErrorIdentifier(e.ErrCode) {
		case server.JSClusterServerNotMemberErr:
			status = http.StatusNotFound
		case server.JSClusterServerMemberChangeInflightErr:
			status = http.StatusConflict
		}
		return &removeError{status, "JetStream: " + e.Description}
	}
	return nil
}

// metaServer is a server of the JetStream cluster as /clusterz shows it:
// up when this node's server has a route to it (or it is this node's).
type metaServer struct {
	Name string `json:"name"`
	Up   bool   `json:"up"`
}

// metaGroup is the embedded server's view of the JetStream meta group:
// its servers, sorted, its leader ("" while it elects one) and its size.
func (b *Broker) metaGroup() (servers []metaServer, leader string, size int, err error) {
	rz, err := b.ns.Routez(&server.RoutezOptions{})
	if err != nil {
		return nil, "", 0, err
	}
	routed := map[string]bool{b.cfg.Cluster.Node: true}
	for _, r := range rz.Routes {
		routed[r.RemoteName] = true
	}
	jz, err := b.ns.Jsz(&server.JSzOptions{})
	if err != nil {
		return nil, "", 0, err
	}
	if jz.Meta == nil {
		return nil, "", 0, nil
	}
	servers = append(servers, metaServer{b.cfg.Cluster.Node, true})
	for _, p := range jz.Meta.Replicas {
		servers = append(servers, metaServer{p.Name, routed[p.Name]})
	}
	slices.SortFunc(servers, func(a, b metaServer) int { return strings.Compare(a.Name, b.Name) })
	return servers, jz.Meta.Leader, jz.Meta.Size, nil
}

// checkRemovable refuses a node the meta group does not know, one that is
// running (its server has a route to this one), any while the meta group
// has no leader, and one whose removal would leave fewer servers than
// each log has replicas.
func (b *Broker) checkRemovable(node string) error {
	servers, leader, size, err := b.metaGroup()
	if err != nil {
		return err
	}
	if servers == nil {
		return &removeError{http.StatusServiceUnavailable, "JetStream's meta group is not up on this node yet: try again"}
	}
	i := slices.IndexFunc(servers, func(s metaServer) bool { return s.Name == node })
	if i < 0 {
		var names []string
		for _, s := range servers {
			names = append(names, s.Name)
		}
		return &removeError{http.StatusNotFound, fmt.Sprintf("%s is not a server of the JetStream cluster (its servers: %s)", node, strings.Join(names, ", "))}
	}
	if servers[i].Up {
		return &removeError{http.StatusConflict, fmt.Sprintf("%s is running: stop it first (SIGTERM), then wait for /clusterz to answer 200", node)}
	}
	if leader == "" || leader == node {
		// A stopped leader's followers elect another within a few seconds.
		return &removeError{http.StatusServiceUnavailable, "the JetStream cluster has no meta leader now: try again once it has one"}
	}
	replicas := b.cfg.Cluster.Replicas
	if replicas == 0 {
		replicas = cluster.DefaultReplicas
	}
	if left := size - 1; left < replicas {
		return &removeError{http.StatusConflict, fmt.Sprintf("removing %s would leave %d servers for logs of %d replicas: add a node first", node, left, replicas)}
	}
	return nil
}
