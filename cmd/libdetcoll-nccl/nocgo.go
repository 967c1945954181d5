//go:build !cgo

package main

// Without cgo there is no C boundary, so no library: go build -buildmode=
// c-shared needs cgo anyway. This file keeps the package buildable (go vet
// ./... with CGO_ENABLED=0).
func main() {}
