package auth

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// ErrUnauthorized is matched by every refusal.
var ErrUnauthorized = errors.New("unauthorized")

// Identity is who a verified token stands for, and until when.
type Identity struct {
	UID string
	// Expires is when the token stops being valid; zero for never (a
	// static token, or a JWT without exp where that is allowed).
	Expires time.Time
}

// Verifier turns a bearer token into the identity it stands for.
type Verifier interface {
	Verify(token string) (Identity, error)
}

// Any accepts a token any of its verifiers accepts.
type Any []Verifier

func (a Any) Verify(token string) (Identity, error) {
	if token == "" {
		return Identity{}, fmt.Errorf("%w: no token", ErrUnauthorized)
	}
	err := fmt.Errorf("%w: no verifier configured", ErrUnauthorized)
	for _, v := range a {
		id, e := v.Verify(token)
		if e == nil {
			return id, nil
		}
		err = e
	}
	return Identity{}, err
}

// Swap is a verifier that can be replaced while in use, so that token
// files can be reloaded (SIGHUP) without a restart. The zero value refuses
// every token.
type Swap struct {
	v atomic.Pointer[Verifier]
}

// NewSwap returns a Swap holding v.
func NewSwap(v Verifier) *Swap {
	s := &Swap{}
	s.Store(v)
	return s
}

// Store replaces the verifier.
func (s *Swap) Store(v Verifier) { s.v.Store(&v) }

func (s *Swap) Verify(token string) (Identity, error) {
	v := s.v.Load()
	if v == nil || *v == nil {
		return Identity{}, fmt.Errorf("%w: no verifier configured", ErrUnauthorized)
	}
	return (*v).Verify(token)
}

// Bearer extracts the token of an "Authorization: Bearer …" value.
func Bearer(header string) string {
	const p = "bearer "
	if len(header) > len(p) && strings.EqualFold(header[:len(p)], p) {
		return strings.TrimSpace(header[len(p):])
	}
	return ""
}
