package gateway

import (
	"fmt"
	"testing"
	"time"
)

// TestUsersForgetIdleUsers: the quota map holds the users who hold
// something or whose buckets are not yet full, not every uid ever seen.
func TestUsersForgetIdleUsers(t *testing.T) {
	us := newUsers(Limits{UserRate: 1e9, UserBurst: 1, UserSubscriptions: 2, UserConnections: 1, UserNewTopics: 1, MaxTopics: 10}.withDefaults())
	if e := us.reserveSub("keeper"); e != nil {
		t.Fatal(e)
	}
	us.settleSub("keeper", "sid-1", time.Now().Add(time.Hour).UnixNano(), true)
	if e := us.connect("holder"); e != nil {
		t.Fatal(e)
	}
	for i := 0; i < 10*minSweep; i++ {
		if e := us.allow(fmt.Sprint("u", i)); e != nil {
			t.Fatalf("u%d: %v", i, e)
		}
	}
	if n := len(us.m); n >= 2*minSweep {
		t.Fatalf("%d users remembered after %d idle ones", n, 10*minSweep)
	}
	if us.m["keeper"] == nil || us.m["holder"] == nil {
		t.Fatal("a user holding a subscription or a connection was forgotten")
	}
	// The bounds still hold for them.
	if e := us.connect("holder"); e == nil || e.Limit != LimitUserConnections {
		t.Fatalf("second connection: %v", e)
	}
	us.reserveSub("keeper")
	us.settleSub("keeper", "", 0, false) // refused by the store: frees its slot
	us.reserveSub("keeper")
	us.settleSub("keeper", "sid-2", time.Now().Add(time.Hour).UnixNano(), true)
	if e := us.reserveSub("keeper"); e == nil || e.Limit != LimitUserSubscriptions {
		t.Fatalf("third subscription: %v", e)
	}
	us.dropSub("keeper", "sid-1")
	if e := us.reserveSub("keeper"); e != nil {
		t.Fatalf("after an unsubscribe: %v", e)
	}
	// Ended subscriptions free their slots without an unsubscribe.
	us.settleSub("keeper", "sid-3", time.Now().UnixNano(), true)
	if e := us.reserveSub("keeper"); e != nil {
		t.Fatalf("after a subscription ended: %v", e)
	}
}
