package ingest

import (
	"context"
	"testing"

	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/internal/background"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestRunsFetchAtALowerPriority: a feed's source fetches and parses on a
// thread at the background's priority, and its batches are written on
// lowered threads too (the store's).
func TestRunsFetchAtALowerPriority(t *testing.T) {
	st := storetest.NewSQLite(t)
	h := newHarness(t, st, tsv.Options{})
	own, err := background.ThreadNice(0)
	if err != nil {
		t.Fatal(err)
	}
	want := min(own+background.Nice, 19)
	fetchedAt := -1
	h.reg.Register(source.Kind{Key: store.CategoryTSV, New: func(source.Env) source.Source {
		return source.Func(func(ctx context.Context, _ source.Request, sink source.Sink) error {
			if fetchedAt, err = background.ThreadNice(0); err != nil {
				return err
			}
			return sink.Indicator(ctx, ioc.Indicator{Kind: ioc.IP, Value: "192.0.2.1", Source: "src", Score: 50})
		})
	}})
	threads, restore := background.Record()
	defer restore()
	f := h.create("https://feeds.example/a.tsv", nil)
	h.r.Wait()
	if err != nil || fetchedAt != want {
		t.Errorf("the source fetched at nice %d (%v), want %d", fetchedAt, err, want)
	}
	if run := h.lastRun(f.ID); run.Stored != 1 || run.ErrorKind != "" {
		t.Errorf("run = %+v", run)
	}
	// The run's thread, and the batch's.
	if all := threads(); len(all) < 2 {
		t.Errorf("lowered threads %v: want the run's and its batch's at least", all)
	}
}
