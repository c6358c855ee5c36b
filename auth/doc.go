// Package auth verifies the bearer tokens clients present: tokens listed
// in a static file, and HMAC-signed tokens (JWT, HS256) that carry the
// user id in "sub" and an optional expiry in "exp". A verified token
// yields the uid a client acts as; it subscribes only as that uid and
// receives only that uid's notifications.
package auth
