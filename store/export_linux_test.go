package store

import (
	"context"
	"database/sql"

	"golang.org/x/sys/unix"
)

// ResidentShare is the share of s's database file in the page cache, read
// through WarmCache's descriptor, which stays open.
func ResidentShare(s *Store) (float64, error) {
	f, err := s.warmFiles.open(s.path)
	if err != nil {
		return 0, err
	}
	var resident, pages int
	err = eachWindow(f, func(_, _, _ int64, in []byte) error {
		for _, p := range in {
			resident += int(p & 1)
		}
		pages += len(in)
		return nil
	})
	if err != nil || pages == 0 {
		return 0, err
	}
	return float64(resident) / float64(pages), nil
}

// Evict drops s's database file from the page cache (written first: dirty
// pages stay), as a machine's start finds it, through WarmCache's
// descriptor.
func Evict(s *Store) error {
	f, err := s.warmFiles.open(s.path)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// ReadConn is a connection of s's read pool, for a test that must read
// twice through the same page cache.
func ReadConn(ctx context.Context, s *Store) (*sql.Conn, error) { return s.readDB().Conn(ctx) }
