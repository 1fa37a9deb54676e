//go:build !linux

package store

import (
	"context"
	"errors"
)

func idleIO() bool { return false }

func warmFile(context.Context, string) (int64, error) { return 0, nil }

var memoryAvailable = func() (int64, error) {
	return 0, errors.New("the memory available is known on Linux only")
}
