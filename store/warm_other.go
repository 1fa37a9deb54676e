//go:build !linux

package store

import (
	"context"
	"errors"
	"os"
)

func idleIO() bool { return false }

func warmFile(context.Context, *os.File) (int64, error) { return 0, nil }

var memoryAvailable = func() (int64, error) {
	return 0, errors.New("the memory available is known on Linux only")
}
