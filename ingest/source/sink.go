package source

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
)

// Sink receives what a source reads. The runner implements it; sources never
// touch the store.
type Sink interface {
	// Indicator hands over one indicator. An error aborts the fetch.
	Indicator(ctx context.Context, ind ioc.Indicator) error
	// Rejected counts an input record that was not usable, with its position
	// (line or object number, 1-based) and the reason.
	Rejected(position int64, reason string)
	// Checkpoint says that everything handed over so far belongs before
	// cursor. The sink stores the cursor together with that data (at the
	// latest when the run's writes are flushed), never ahead of it, so a
	// later run may resume from the last cursor stored.
	Checkpoint(ctx context.Context, cursor string) error
	// ListComplete says that a snapshot list (published whole each time:
	// PhishTank, OpenPhish, a rule set) was read to its end, naming it by
	// the Source of the indicators it gave. since is zero when this run
	// alone read it; for a list read over several runs, resumed from a
	// cursor, it is the start of the walk's first run (Request.Started of
	// that run, kept in the cursor). After the run succeeds, the feed's
	// sightings from that list not handed over since then are expired. A
	// list not read to its end (an error, a cap, an unchanged list not
	// downloaded) is never named, so nothing of it expires.
	ListComplete(source string, since time.Time)
	// Downloaded says how a download goes: read bytes of total so far
	// (total is -1 when the server did not say).
	Downloaded(read, total int64)
	// Backlog says, for a source written at a constant rate, that of the
	// total rows of the lists it is writing, written are written (over this
	// poll and the ones before).
	Backlog(written, total int64)
}

// SinkBase ignores the list, download and backlog reports: a sink embeds
// it when it only wants the indicators, rejections and checkpoints.
type SinkBase struct{}

// ListComplete ignores the report.
func (SinkBase) ListComplete(string, time.Time) {}

// Downloaded ignores the report.
func (SinkBase) Downloaded(int64, int64) {}

// Backlog ignores the report.
func (SinkBase) Backlog(int64, int64) {}

// Finish ends the Fetch of a source written as a function returning its
// final cursor: it checkpoints that cursor unless the fetch failed (a run
// that stops at a limit, a pace or a cap checkpointed before it stopped)
// or the sink already has it, and returns the fetch's error.
func Finish(ctx context.Context, sink Sink, fetch func(sink Sink) (cursor string, err error)) error {
	t := &tracker{Sink: sink}
	cursor, err := fetch(t)
	if err != nil && !errors.Is(err, ioc.ErrUnchanged) {
		return err
	}
	if !t.checkpointed || t.last != cursor {
		if cerr := sink.Checkpoint(ctx, cursor); cerr != nil {
			return cerr
		}
	}
	return err
}

// Walk adapts to Source a fetch written as a walk that returns the cursor
// the next run starts from. The walk reads its credentials from req.Feed
// for the one run, so a source never keeps them past it.
type Walk func(ctx context.Context, req Request, sink Sink) (cursor string, err error)

// Fetch runs the walk and checkpoints the cursor it returns, as Finish does.
func (w Walk) Fetch(ctx context.Context, req Request, sink Sink) error {
	return Finish(ctx, sink, func(sink Sink) (string, error) { return w(ctx, req, sink) })
}

// tracker remembers the last cursor checkpointed through it.
type tracker struct {
	Sink
	checkpointed bool
	last         string
}

func (t *tracker) Checkpoint(ctx context.Context, cursor string) error {
	if err := t.Sink.Checkpoint(ctx, cursor); err != nil {
		return err
	}
	t.checkpointed, t.last = true, cursor
	return nil
}

// UpToLimit lets a source that sizes its chunks by Request.Limit read on to
// the end of its chunk when the sink reports the limit on the indicator
// that used it up: that indicator was stored, and the source stops at the
// next checkpoint with an exact cursor. Indicators after it are refused,
// and a list the limit cut short is never said complete.
func UpToLimit(sink Sink) Sink { return &limitSink{Sink: sink} }

type limitSink struct {
	Sink
	reached bool
}

func (s *limitSink) Indicator(ctx context.Context, ind ioc.Indicator) error {
	err := s.Sink.Indicator(ctx, ind)
	if errors.Is(err, ErrLimitReached) && !s.reached {
		s.reached = true
		return nil
	}
	return err
}

func (s *limitSink) ListComplete(source string, since time.Time) {
	if !s.reached {
		s.Sink.ListComplete(source, since)
	}
}

// progressEvery is the longest a download that is receiving bytes goes
// without a report, so that a slow one shows its bytes coming in even
// when it is far from the next 64 KiB step.
const progressEvery = time.Second

// ProgressReader reads r and tells sink how many bytes were read so far:
// on the first bytes, then every 64 KiB or every second while bytes come,
// and at the end (EOF, or all of total), so that a run shows progress
// while it downloads and before it parses.
func ProgressReader(sink Sink, r io.Reader, total int64) io.Reader {
	return &progressReader{r: r, sink: sink, total: total}
}

type progressReader struct {
	r           io.Reader
	sink        Sink
	total       int64
	read, shown int64
	shownAt     time.Time
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.read += int64(n)
	if p.read == p.shown {
		return n, err
	}
	now := time.Now()
	whole := p.total > 0 && p.read >= p.total // a decoder may never read on to EOF
	if p.shown == 0 || p.read-p.shown >= 64<<10 || err != nil || whole || now.Sub(p.shownAt) >= progressEvery {
		p.shown, p.shownAt = p.read, now
		p.sink.Downloaded(p.read, p.total)
	}
	return n, err
}
