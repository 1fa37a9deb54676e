//go:build unix

package server

import (
	"fmt"
	"syscall"
)

// raiseFileLimit lifts the soft limit on open files to the hard limit: each
// connection is a file, and the usual soft limit of 1,024 would refuse new
// connections long before memory runs short.
func raiseFileLimit() error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return fmt.Errorf("server: getrlimit: %w", err)
	}
	if l.Cur >= l.Max {
		return nil
	}
	l.Cur = l.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return fmt.Errorf("server: setrlimit: %w", err)
	}
	return nil
}
