package auth

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var b64 = base64.RawURLEncoding

func TestHMACRoundTripAndRefusals(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := &HMAC{Secret: []byte("0123456789abcdef0123456789abcdef"), Now: func() time.Time { return now }}
	tok, err := h.Sign("alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if id, err := h.Verify(tok); err != nil || id.UID != "alice" || !id.Expires.Equal(now.Add(time.Hour)) {
		t.Fatalf("Verify = %+v, %v", id, err)
	}
	other := &HMAC{Secret: []byte("another secret, just as long....")}
	parts := strings.Split(tok, ".")
	forged, _ := other.Sign("alice", time.Hour)
	noneAlg := b64.EncodeToString([]byte(`{"alg":"none"}`)) + "." + parts[1] + "."
	bad := map[string]string{
		"empty":           "",
		"garbage":         "abc",
		"other secret":    forged,
		"tampered claims": parts[0] + "." + b64.EncodeToString([]byte(`{"sub":"bob"}`)) + "." + parts[2],
		"alg none":        noneAlg,
		"truncated sig":   tok[:len(tok)-3],
	}
	for name, tok := range bad {
		if id, err := h.Verify(tok); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("%s: Verify = %+v, %v", name, id, err)
		}
	}
	now = now.Add(2 * time.Hour)
	if _, err := h.Verify(tok); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("expired token accepted: %v", err)
	}
}

func TestTokenFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(path, []byte("# comment\n\nsecret-token-alice-1 alice\nsecret-token-bob-22 bob\n"), 0o600)
	toks, err := LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	v := Any{toks}
	if id, err := v.Verify("secret-token-bob-22"); err != nil || id.UID != "bob" || !id.Expires.IsZero() {
		t.Fatalf("Verify = %+v, %v", id, err)
	}
	for _, tok := range []string{"", "secret-token-bob-2", "secret-token-bob-222"} {
		if _, err := v.Verify(tok); !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("%q accepted", tok)
		}
	}
	for _, body := range []string{"", "short alice\n", "one-field-only-here\n", "a-long-enough-token alice extra\n"} {
		os.WriteFile(path, []byte(body), 0o600)
		if _, err := LoadTokens(path); err == nil {
			t.Errorf("token file %q accepted", body)
		}
	}
}

func TestBearer(t *testing.T) {
	for in, want := range map[string]string{"Bearer abc": "abc", "bearer  xyz ": "xyz", "Basic abc": "", "Bearer": "", "": ""} {
		if got := Bearer(in); got != want {
			t.Errorf("Bearer(%q) = %q, want %q", in, got, want)
		}
	}
}

// sign mints a token with the given claims under secret.
func sign(t *testing.T, secret []byte, claims jwt.MapClaims) string {
	t.Helper()
	tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestHMACTimeIssuerAudience(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	secret := []byte("0123456789abcdef0123456789abcdef")
	h := &HMAC{Secret: secret, Issuer: "cellcast-test", Audience: "brokers", Leeway: 5 * time.Second, Now: func() time.Time { return now }}
	exp := now.Add(time.Hour).Unix()
	good := jwt.MapClaims{"sub": "alice", "exp": exp, "iss": "cellcast-test", "aud": []string{"brokers", "other"}}
	with := func(k string, v any) jwt.MapClaims {
		c := jwt.MapClaims{}
		for kk, vv := range good {
			c[kk] = vv
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	if id, err := h.Verify(sign(t, secret, good)); err != nil || id.UID != "alice" || id.Expires.Unix() != exp+5 {
		t.Fatalf("good token: %+v, %v", id, err)
	}
	// nbf within the leeway passes; beyond it, refused.
	if _, err := h.Verify(sign(t, secret, with("nbf", now.Add(3*time.Second).Unix()))); err != nil {
		t.Fatalf("nbf within the leeway: %v", err)
	}
	bad := map[string]jwt.MapClaims{
		"nbf in the future": with("nbf", now.Add(time.Minute).Unix()),
		"no exp":            with("exp", nil),
		"expired":           with("exp", now.Add(-time.Minute).Unix()),
		"wrong issuer":      with("iss", "someone-else"),
		"no issuer":         with("iss", nil),
		"wrong audience":    with("aud", "other"),
		"no sub":            with("sub", nil),
	}
	for name, c := range bad {
		if id, err := h.Verify(sign(t, secret, c)); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("%s: Verify = %+v, %v", name, id, err)
		}
	}
	// Without exp only when allowed, and then it never expires.
	h.AllowNoExpiry = true
	if id, err := h.Verify(sign(t, secret, with("exp", nil))); err != nil || !id.Expires.IsZero() {
		t.Fatalf("no exp, allowed: %+v, %v", id, err)
	}
	// Another algorithm under the same secret is refused.
	hs512, _ := jwt.NewWithClaims(jwt.SigningMethodHS512, good).SignedString(secret)
	if _, err := h.Verify(hs512); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("HS512 accepted: %v", err)
	}
}

func TestSwap(t *testing.T) {
	var s Swap
	if _, err := s.Verify("secret-token-alice-1"); !errors.Is(err, ErrUnauthorized) {
		t.Fatal("an empty Swap accepted a token")
	}
	s.Store(Tokens{"secret-token-alice-1": "alice"})
	if id, err := s.Verify("secret-token-alice-1"); err != nil || id.UID != "alice" {
		t.Fatalf("Verify = %+v, %v", id, err)
	}
	s.Store(Tokens{"secret-token-bob-22": "bob"})
	if _, err := s.Verify("secret-token-alice-1"); !errors.Is(err, ErrUnauthorized) {
		t.Fatal("a revoked token still accepted")
	}
}
