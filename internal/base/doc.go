// Package base holds what every layer of detcoll shares and the public
// package re-exports: the error sentinels and error types, the operations and
// their signatures, and the validation of a call's arguments.
//
// It lives apart from the root package so that backends can return errors
// that match the public sentinels without importing the root package (which
// imports them).
package base
