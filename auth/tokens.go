package auth

import (
	"bufio"
	"crypto/subtle"
	"fmt"
	"os"
	"strings"
)

// Tokens is a static token list. Its tokens never expire; revoke one by
// removing it from the file and reloading (SIGHUP).
type Tokens map[string]string // token -> uid

// LoadTokens reads a token file: one "token uid" pair per line; blank
// lines and lines starting with '#' are skipped.
func LoadTokens(path string) (Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t := Tokens{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want \"token uid\"", path, n)
		}
		if len(fields[0]) < 16 {
			return nil, fmt.Errorf("%s:%d: token shorter than 16 characters", path, n)
		}
		t[fields[0]] = fields[1]
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(t) == 0 {
		return nil, fmt.Errorf("%s: no tokens", path)
	}
	return t, nil
}

func (t Tokens) Verify(token string) (Identity, error) {
	for tok, uid := range t {
		// Compare every entry in constant time, so timing tells nothing.
		if subtle.ConstantTimeCompare([]byte(tok), []byte(token)) == 1 {
			return Identity{UID: uid}, nil
		}
	}
	return Identity{}, fmt.Errorf("%w: unknown token", ErrUnauthorized)
}
