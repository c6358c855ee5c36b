package auth

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// ErrUnauthorized is matched by every refusal.
var ErrUnauthorized = errors.New("unauthorized")

// Verifier turns a bearer token into the uid it stands for.
type Verifier interface {
	Verify(token string) (uid string, err error)
}

// Tokens is a static token list.
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

func (t Tokens) Verify(token string) (string, error) {
	for tok, uid := range t {
		// Compare every entry in constant time, so timing tells nothing.
		if subtle.ConstantTimeCompare([]byte(tok), []byte(token)) == 1 {
			return uid, nil
		}
	}
	return "", fmt.Errorf("%w: unknown token", ErrUnauthorized)
}

// HMAC verifies JWTs signed with HS256 under a shared secret.
type HMAC struct {
	Secret []byte
	Now    func() time.Time // default time.Now
}

var b64 = base64.RawURLEncoding

const jwtHeader = `{"alg":"HS256","typ":"JWT"}`

type claims struct {
	Sub string `json:"sub"`
	Exp int64  `json:"exp,omitempty"`
}

// Sign mints a token for uid, valid for ttl (zero: no expiry).
func (h *HMAC) Sign(uid string, ttl time.Duration) (string, error) {
	if uid == "" {
		return "", errors.New("auth: empty uid")
	}
	c := claims{Sub: uid}
	if ttl > 0 {
		c.Exp = h.now().Add(ttl).Unix()
	}
	body, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	signing := b64.EncodeToString([]byte(jwtHeader)) + "." + b64.EncodeToString(body)
	return signing + "." + b64.EncodeToString(h.mac(signing)), nil
}

func (h *HMAC) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *HMAC) mac(signing string) []byte {
	m := hmac.New(sha256.New, h.Secret)
	m.Write([]byte(signing))
	return m.Sum(nil)
}

func (h *HMAC) Verify(token string) (string, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", fmt.Errorf("%w: not a JWT", ErrUnauthorized)
	}
	sig, err := b64.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, h.mac(parts[0]+"."+parts[1])) {
		return "", fmt.Errorf("%w: bad signature", ErrUnauthorized)
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	hb, err := b64.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &hdr) != nil || hdr.Alg != "HS256" {
		return "", fmt.Errorf("%w: only HS256 tokens are accepted", ErrUnauthorized)
	}
	var c claims
	cb, err := b64.DecodeString(parts[1])
	if err != nil || json.Unmarshal(cb, &c) != nil || c.Sub == "" {
		return "", fmt.Errorf("%w: claims need a \"sub\"", ErrUnauthorized)
	}
	if c.Exp != 0 && h.now().Unix() >= c.Exp {
		return "", fmt.Errorf("%w: token expired", ErrUnauthorized)
	}
	return c.Sub, nil
}

// Any accepts a token any of its verifiers accepts.
type Any []Verifier

func (a Any) Verify(token string) (string, error) {
	if token == "" {
		return "", fmt.Errorf("%w: no token", ErrUnauthorized)
	}
	err := fmt.Errorf("%w: no verifier configured", ErrUnauthorized)
	for _, v := range a {
		uid, e := v.Verify(token)
		if e == nil {
			return uid, nil
		}
		err = e
	}
	return "", err
}

// Bearer extracts the token of an "Authorization: Bearer …" value.
func Bearer(header string) string {
	const p = "bearer "
	if len(header) > len(p) && strings.EqualFold(header[:len(p)], p) {
		return strings.TrimSpace(header[len(p):])
	}
	return ""
}
