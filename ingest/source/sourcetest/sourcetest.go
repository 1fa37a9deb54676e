// Package sourcetest helps the tests of sources.
package sourcetest

import (
	"context"

	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// Fetch runs src into sink and returns the cursor the next run would start
// from, as the runner keeps it: the last one src checkpointed, or
// req.Cursor when it checkpointed none.
func Fetch(ctx context.Context, src source.Source, req source.Request, sink source.Sink) (string, error) {
	t := &tracker{Sink: sink, last: req.Cursor}
	err := src.Fetch(ctx, req, t)
	return t.last, err
}

type tracker struct {
	source.Sink
	last string
}

func (t *tracker) Checkpoint(ctx context.Context, cursor string) error {
	if err := t.Sink.Checkpoint(ctx, cursor); err != nil {
		return err
	}
	t.last = cursor
	return nil
}

// Collector is a sink that keeps the indicators handed to it and ignores
// everything else.
type Collector struct {
	source.SinkBase
	Indicators []ioc.Indicator
}

func (c *Collector) Indicator(_ context.Context, ind ioc.Indicator) error {
	c.Indicators = append(c.Indicators, ind)
	return nil
}

func (c *Collector) Rejected(int64, string) {}

func (c *Collector) Checkpoint(context.Context, string) error { return nil }
