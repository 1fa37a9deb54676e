package ingest

import (
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"
)

// DefaultWriteRate is the constant rate, in indicators per hour, at which
// the kinds that declare constant-rate writing (RISK_LIST) store a list
// unless the server says otherwise: a 1,000,000-row list takes six days.
const DefaultWriteRate = 1_000_000.0 / (6 * 24)

// constantRate is the runner's side of constant-rate writing, a property
// a kind declares (Category.Rate): each poll stores at most share
// indicators, rate × the polling interval, so that polls on schedule write
// at the rate, and a huge list never floods the store in one go. The
// source keeps its place in its cursor, stops at ioc.ErrPaceReached and
// reports how far it is (ioc.Backlog); the run records that progress with
// the expected completion.
type constantRate struct {
	rate     float64 // indicators per hour
	every    time.Duration
	share    int64
	mu       sync.Mutex
	reported bool
	written  int64
	total    int64
}

// newConstantRate returns the pacing of a kind with rate (per hour) polled
// every; nil when rate is not positive (no pacing).
func newConstantRate(rate float64, every time.Duration) *constantRate {
	if rate <= 0 || every <= 0 {
		return nil
	}
	share := int64(math.Ceil(rate * every.Hours()))
	return &constantRate{rate: rate, every: every, share: max(share, 1)}
}

func (p *constantRate) report(written, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reported, p.written, p.total = true, written, max(total, written)
}

// note is the run's note when its share ended it.
func (p *constantRate) note() string {
	return fmt.Sprintf("constant rate: this poll's share of %d IoCs (%s an hour) is written; the rest comes with the next polls",
		p.share, formatRate(p.rate))
}

// backlog is what the run records of the source's progress; nil when the
// kind is not paced or the source said nothing.
func (p *constantRate) backlog(now time.Time) *backlog {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.reported {
		return nil
	}
	b := &backlog{written: p.written, total: p.total}
	if left := p.total - p.written; left > 0 {
		// The rest goes in whole shares, one a poll.
		polls := (left + p.share - 1) / p.share
		at := now.Add(time.Duration(polls) * p.every).UTC()
		b.expected = &at
	}
	return b
}

// backlog is how far a constant-rate source is through its lists.
type backlog struct {
	written, total int64
	expected       *time.Time // nil once everything is written
}

// formatRate shows a rate as the user set it: whole numbers whole, small
// rates with their digits (0.125, not 0.1), large ones to one decimal.
func formatRate(r float64) string {
	switch {
	case r == math.Trunc(r):
		return fmt.Sprintf("%.0f", r)
	case r < 10:
		return strconv.FormatFloat(r, 'g', 3, 64)
	}
	return fmt.Sprintf("%.1f", r)
}
