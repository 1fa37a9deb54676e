package taxii

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

var errSinkFull = errors.New("sink refuses")

type rejection struct {
	Pos    int64
	Reason string
}

// recSink records what a source hands over the way the runner stores it:
// indicators stay pending until Checkpoint commits them; abort drops the
// pending ones, as the runner's transaction does when a fetch fails.
type recSink struct {
	source.SinkBase
	mu       sync.Mutex
	pending  []ioc.Indicator
	stored   []ioc.Indicator
	rejected []rejection
	cursors  []string
	// failAfter, when > 0, makes the failAfter-th Indicator call fail.
	failAfter int
	calls     int
}

func (s *recSink) Indicator(_ context.Context, ind ioc.Indicator) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.failAfter > 0 && s.calls == s.failAfter {
		return errSinkFull
	}
	s.pending = append(s.pending, ind)
	return nil
}

func (s *recSink) Rejected(pos int64, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejected = append(s.rejected, rejection{pos, reason})
}

func (s *recSink) Checkpoint(_ context.Context, cursor string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stored = append(s.stored, s.pending...)
	s.pending = nil
	s.cursors = append(s.cursors, cursor)
	return nil
}

func (s *recSink) abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = nil
}

// all returns pending and stored indicators, for tests that do not care
// about checkpoints.
func (s *recSink) all() []ioc.Indicator {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(append([]ioc.Indicator(nil), s.stored...), s.pending...)
}

// values returns "kind:value" of the stored indicators and fails on a
// duplicate.
func (s *recSink) values() (map[string]bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := make(map[string]bool, len(s.stored))
	for _, ind := range s.stored {
		k := string(ind.Kind) + ":" + ind.Value
		if m[k] {
			return m, fmt.Errorf("duplicate %s", k)
		}
		m[k] = true
	}
	return m, nil
}
