package gateway

import "strings"

// internalPrefixes are the Go packages whose names lead their errors
// ("catalog: bad query: …"): useful in a log, noise to a client, which
// has the code to tell errors apart.
var internalPrefixes = map[string]bool{
	"catalog": true, "dewey": true, "geo": true, "service": true, "subscriptions": true,
	"listdb": true, "delivery": true, "cluster": true, "gateway": true, "lsm": true,
}

// userMessage is err's text for a client: the chain of wrapped messages
// without the package names that lead some of its parts.
func userMessage(err error) string {
	parts := strings.Split(err.Error(), ": ")
	out := parts[:0]
	for _, p := range parts {
		if !internalPrefixes[p] {
			out = append(out, p)
		}
	}
	return strings.Join(out, ": ")
}
