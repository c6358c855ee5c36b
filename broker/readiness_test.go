package broker

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

func clusterStatus(t *testing.T, b *Broker, path string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get("http://" + b.HTTPAddr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body
}

// TestReadinessIsTheNodesOwn: when a node dies, its shards go unserved
// until others take them. /clusterz says so on every node (503, naming
// the shards), while /readyz stays 200 on the survivors, which still
// serve clients: a load balancer keeps them. Once the shards have new
// owners /clusterz is 200 again.
func TestReadinessIsTheNodesOwn(t *testing.T) {
	brokers := startCluster(t, 3)
	for _, b := range brokers {
		if code, _ := clusterStatus(t, b, "/readyz"); code != http.StatusOK {
			t.Fatalf("readyz %d on a settled cluster", code)
		}
		if code, body := clusterStatus(t, b, "/clusterz"); code != http.StatusOK || body["shards"].(float64) == 0 {
			t.Fatalf("clusterz %d %v on a settled cluster", code, body)
		}
	}
	brokers[2].crash()
	sawUnserved := false
	for deadline := time.Now().Add(30 * time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatalf("the dead node's shards were not taken over within 30 s (unserved seen: %v)", sawUnserved)
		}
		code, body := clusterStatus(t, brokers[0], "/clusterz")
		if code == http.StatusServiceUnavailable {
			if len(body["unserved"].([]any)) == 0 {
				t.Fatalf("clusterz 503 naming no shard: %v", body)
			}
			sawUnserved = true
		}
		for _, b := range brokers[:2] {
			if rc, _ := clusterStatus(t, b, "/readyz"); rc != http.StatusOK {
				t.Fatalf("a survivor's readyz answered %d during the failover", rc)
			}
		}
		if sawUnserved && code == http.StatusOK {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}
