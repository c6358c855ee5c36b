// Package auth verifies the bearer tokens clients present: tokens listed
// in a static file, and HMAC-signed tokens (JWT, HS256, checked by
// golang-jwt) that carry the user id in "sub", an expiry in "exp"
// (required unless allowed to be missing), and optionally "nbf", "iss"
// and "aud". A verified token yields an Identity: the uid a client acts
// as and when the token expires, which is when the transports close the
// connection it opened. Swap lets a broker reload its token files without
// a restart.
package auth
