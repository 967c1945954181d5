// Package base holds what every layer of detcoll shares and the public
// package re-exports: the error sentinels and error types, the operations and
// their signatures, and the validation of a call's arguments.
//
// It lives apart from the root package so that backends can return errors
// that match the public sentinels without importing the root package (which
// imports them).
//
// It imports only internal/core/num. It must never import the root package (which
// imports it), a backend, the store or a tool's package: everything above it
// stands on it.
package base
