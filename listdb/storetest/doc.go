// Package storetest is the test suite every subscriptions.Store built on
// listdb must pass: a randomized differential test against the Oracle,
// expiry, bad input and restart checks. dualdb and twodb run it from their
// tests, and so does any other backend.
package storetest
