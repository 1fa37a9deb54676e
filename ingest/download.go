package ingest

import (
	"sync"
	"time"

	"github.com/tifeeds/tifeeds/events"
)

// downloadProgressEvery is the least time between two progress events of a
// download.
const downloadProgressEvery = time.Second

// downloadReporter publishes a run's download progress: the first report
// at once, then at most one a second, so that subscribers see the run move
// while it downloads, before anything is parsed. A report held back by that
// pace is published when the second is over, and the report of the whole
// download at once: the last event of a download shows where it ended
// (its total, when the server sent one), not where the pace last let one
// through.
type downloadReporter struct {
	bus           *events.Bus
	feedID, runID int64
	sink          *BatchSink

	mu          sync.Mutex
	read, total int64 // the latest report
	shown       int64 // read, as last published
	shownAt     time.Time
	trailing    *time.Timer // publishes a held-back report
	ended       bool
}

func (r *Runner) downloadProgress(feedID, runID int64, sink *BatchSink) *downloadReporter {
	return &downloadReporter{bus: r.bus, feedID: feedID, runID: runID, sink: sink}
}

// report takes a download's progress (source.Sink.Downloaded).
func (d *downloadReporter) report(read, total int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ended {
		return
	}
	d.read, d.total = read, total
	now := time.Now()
	whole := total > 0 && read >= total
	if d.shownAt.IsZero() || whole || now.Sub(d.shownAt) >= downloadProgressEvery {
		d.publishLocked(now)
		return
	}
	if d.trailing == nil {
		d.trailing = time.AfterFunc(downloadProgressEvery-now.Sub(d.shownAt), d.publishHeldBack)
	}
}

func (d *downloadReporter) publishHeldBack() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.trailing = nil
	if !d.ended && d.read != d.shown {
		d.publishLocked(time.Now())
	}
}

// end publishes a report still held back, before the run's final event,
// and stops the reporting.
func (d *downloadReporter) end() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.trailing != nil {
		d.trailing.Stop()
		d.trailing = nil
	}
	if !d.ended && d.read != d.shown {
		d.publishLocked(time.Now())
	}
	d.ended = true
}

func (d *downloadReporter) publishLocked(now time.Time) {
	if d.trailing != nil {
		d.trailing.Stop()
		d.trailing = nil
	}
	d.shown, d.shownAt = d.read, now
	s := d.sink.Stats()
	d.bus.Publish(events.Event{FeedID: d.feedID, Progress: &events.Progress{FeedID: d.feedID, RunID: d.runID,
		Fetched: s.Fetched, Stored: s.Stored, Rejected: s.Rejected, Downloaded: d.read, DownloadTotal: d.total}})
}
