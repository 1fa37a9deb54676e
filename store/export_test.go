package store

import (
	"database/sql"
	"time"
)

// SetOverviewCost sets what the cached overview cost to read, which bounds
// how stale it may be served.
func SetOverviewCost(s *Store, d time.Duration) {
	s.overview.mu.Lock()
	defer s.overview.mu.Unlock()
	s.overview.cost = d
}

// RecentKeysMax lets tests take the plain path of keyed pages.
var RecentKeysMax = &recentKeysMax

// RecentKeysShare lets tests make recentKeysMax the cap at any size.
var RecentKeysShare = &recentKeysShare

// DenseKind lets tests take pageByType's id-order path with few IoCs.
var DenseKind = &denseKind

// ReadDB is the pool s reads from outside transactions.
func ReadDB(s *Store) *sql.DB { return s.readDB() }

// SparseKeys lets tests take the walk of keyed pages with few IoCs.
var SparseKeys = &sparseKeys
