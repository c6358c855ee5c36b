package gateway

import (
	"errors"
	"fmt"
	"testing"
)

func TestUserMessageDropsPackageNames(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: attribute %q is not indexed", errors.New("catalog: bad query"), "nope"), `bad query: attribute "nope" is not indexed`},
		{fmt.Errorf("cell %q: %w: %q", "1.x", errors.New("dewey: malformed id"), "1.x"), `cell "1.x": malformed id: "1.x"`},
		// A value that only looks like a package name stays.
		{fmt.Errorf("desc %q: too long", "geo: x"), `desc "geo: x": too long`},
		{errors.New("service: unavailable for now, retry"), "unavailable for now, retry"},
	} {
		if got := userMessage(c.err); got != c.want {
			t.Errorf("userMessage(%q) = %q, want %q", c.err, got, c.want)
		}
	}
}
