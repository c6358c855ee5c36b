package auth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestHMACRoundTripAndRefusals(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := &HMAC{Secret: []byte("0123456789abcdef0123456789abcdef"), Now: func() time.Time { return now }}
	tok, err := h.Sign("alice", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if uid, err := h.Verify(tok); err != nil || uid != "alice" {
		t.Fatalf("Verify = %q, %v", uid, err)
	}
	other := &HMAC{Secret: []byte("another secret, just as long....")}
	parts := strings.Split(tok, ".")
	forged, _ := other.Sign("alice", 0)
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
		if uid, err := h.Verify(tok); !errors.Is(err, ErrUnauthorized) {
			t.Errorf("%s: Verify = %q, %v", name, uid, err)
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
	if uid, err := v.Verify("secret-token-bob-22"); err != nil || uid != "bob" {
		t.Fatalf("Verify = %q, %v", uid, err)
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
