package auth

import (
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// HMAC verifies JWTs signed with HS256 under a shared secret. The uid is
// the "sub" claim. golang-jwt checks the signature, the algorithm (HS256
// only: "none" and every other alg are refused) and the time claims.
type HMAC struct {
	Secret []byte
	// Issuer and Audience, when set, must be the token's "iss" and one of
	// its "aud".
	Issuer, Audience string
	// Leeway forgives clock skew on "exp" and "nbf".
	Leeway time.Duration
	// AllowNoExpiry accepts tokens without "exp"; by default they are
	// refused, since such a token could never be retired.
	AllowNoExpiry bool
	Now           func() time.Time // default time.Now
}

// Sign mints a token for uid, valid for ttl (zero: no expiry).
func (h *HMAC) Sign(uid string, ttl time.Duration) (string, error) {
	if uid == "" {
		return "", errors.New("auth: empty uid")
	}
	now := h.now()
	c := jwt.RegisteredClaims{Subject: uid, IssuedAt: jwt.NewNumericDate(now), Issuer: h.Issuer}
	if h.Audience != "" {
		c.Audience = jwt.ClaimStrings{h.Audience}
	}
	if ttl > 0 {
		c.ExpiresAt = jwt.NewNumericDate(now.Add(ttl))
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString(h.Secret)
}

func (h *HMAC) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *HMAC) Verify(token string) (Identity, error) {
	opts := []jwt.ParserOption{jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithLeeway(h.Leeway), jwt.WithTimeFunc(h.now)}
	if !h.AllowNoExpiry {
		opts = append(opts, jwt.WithExpirationRequired())
	}
	if h.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(h.Issuer))
	}
	if h.Audience != "" {
		opts = append(opts, jwt.WithAudience(h.Audience))
	}
	var c jwt.RegisteredClaims
	_, err := jwt.ParseWithClaims(token, &c, func(*jwt.Token) (any, error) { return h.Secret, nil }, opts...)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: %w", ErrUnauthorized, err)
	}
	if c.Subject == "" {
		return Identity{}, fmt.Errorf("%w: claims need a \"sub\"", ErrUnauthorized)
	}
	id := Identity{UID: c.Subject}
	if c.ExpiresAt != nil {
		// The leeway that let the token in also lets it live.
		id.Expires = c.ExpiresAt.Add(h.Leeway)
	}
	return id, nil
}
