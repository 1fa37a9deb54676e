package store

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/uptrace/bun"
)

// DefaultKeyUseFlush is how often recorded API-key use reaches
// api_keys.last_used_at.
const DefaultKeyUseFlush = 30 * time.Second

// keyUses is API-key use recorded in memory: an authenticated read writes
// nothing, so readers never queue on SQLite's one writer or on a row lock
// in PostgreSQL. Use reaches the table in one transaction per flush, on a
// timer and when the store closes; a crash loses at most one interval of
// last_used_at, which is informational.
type keyUses struct {
	mu      sync.Mutex
	pending map[int64]time.Time
	started bool
	stop    chan struct{}
	done    chan struct{}
}

// RecordKeyUse notes that key id authenticated a request at t; the next
// flush writes it.
func (s *Store) RecordKeyUse(id int64, t time.Time) {
	u := &s.keyUses
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.pending == nil {
		u.pending = map[int64]time.Time{}
	}
	if t.After(u.pending[id]) {
		u.pending[id] = t
	}
	if !u.started {
		u.started = true
		u.stop, u.done = make(chan struct{}), make(chan struct{})
		every := s.KeyUseFlush
		if every <= 0 {
			every = DefaultKeyUseFlush
		}
		go s.flushKeyUsesEvery(every, u.stop, u.done)
	}
}

func (s *Store) flushKeyUsesEvery(every time.Duration, stop, done chan struct{}) {
	defer close(done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), every)
			// Errors keep the uses pending for the next flush; nothing to
			// tell a caller, and the table answers again soon.
			_ = s.FlushKeyUses(ctx)
			cancel()
		}
	}
}

// FlushKeyUses writes the recorded API-key use to api_keys.last_used_at in
// one transaction. Use recorded meanwhile waits for the next flush; on
// failure the uses stay pending.
func (s *Store) FlushKeyUses(ctx context.Context) error {
	u := &s.keyUses
	u.mu.Lock()
	batch := u.pending
	u.pending = nil
	u.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		for id, t := range batch {
			// Never backwards: another instance may have flushed later use.
			if _, err := tx.NewUpdate().Model((*APIKey)(nil)).Set("last_used_at = ?", t.UTC()).
				Where("id = ? AND (last_used_at IS NULL OR last_used_at < ?)", id, t.UTC()).Exec(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		u.mu.Lock()
		for id, t := range batch {
			if t.After(u.pending[id]) {
				if u.pending == nil {
					u.pending = map[int64]time.Time{}
				}
				u.pending[id] = t
			}
		}
		u.mu.Unlock()
		return fmt.Errorf("store: unable to record the use of %d API keys: %w", len(batch), err)
	}
	return nil
}

// stopKeyUses ends the flush timer and flushes what is pending.
func (s *Store) stopKeyUses() {
	u := &s.keyUses
	u.mu.Lock()
	started := u.started
	u.started = false
	stop, done := u.stop, u.done
	u.mu.Unlock()
	if started {
		close(stop)
		<-done
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.FlushKeyUses(ctx)
}
