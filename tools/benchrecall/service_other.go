//go:build !linux

package main

import (
	"context"
	"errors"
	"io"
)

// serve: the harness starts the service with Linux process attributes, and
// PostgreSQL's schemas come from a Linux-only helper; the set and its
// baseline (-systems none) work anywhere.
func serve(context.Context, config, *Set, io.Writer) ([]*system, error) {
	return nil, errors.New("serving the set runs on Linux only; -systems none scores the baseline")
}
