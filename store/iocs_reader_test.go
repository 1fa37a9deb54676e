package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// IoC pages, exports, TAXII's change order and lookups answer while a
// write transaction is open: on SQLite they read on the read pool rather
// than queue on the one writing connection for a batch to commit.
func TestIoCReadsDoNotWaitForTheWriter(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "f")
		var inds []ioc.Indicator
		for i := range 20 {
			inds = append(inds, dom(fmt.Sprintf("w%02d.example", i), "src", i*5, "t"))
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: 10 * day, Indicators: inds})
		if _, err := s.CatchUpKeys(ctx, 1000); err != nil {
			t.Fatal(err)
		}
		started, release, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
		go func() {
			done <- s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
				if _, err := tx.ExecContext(ctx, "UPDATE iocs SET score = score WHERE id = (SELECT min(id) FROM iocs)"); err != nil {
					return err
				}
				close(started)
				<-release
				return nil
			})
		}()
		<-started
		// A generous bound: waiting for the writer would take until release.
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		for name, c := range map[string]struct {
			f store.IoCFilter
			o store.IoCOrder
		}{
			"default":    {store.IoCFilter{}, store.IoCOrder{}},
			"score":      {store.IoCFilter{}, store.IoCOrder{Field: store.IoCOrderScore, Desc: true}},
			"type order": {store.IoCFilter{}, store.IoCOrder{Field: store.IoCOrderType}},
			"value":      {store.IoCFilter{}, store.IoCOrder{Field: store.IoCOrderValue}},
			"tag":        {store.IoCFilter{Tag: "t"}, store.IoCOrder{}},
			"search":     {store.IoCFilter{Search: "w1"}, store.IoCOrder{}},
			"feed":       {store.IoCFilter{FeedID: feed}, store.IoCOrder{}},
			"min score":  {store.IoCFilter{MinScore: ptr(50)}, store.IoCOrder{Field: store.IoCOrderLastSeen}},
		} {
			page, err := s.IoCs(rctx, c.f, c.o, 5, "")
			if err != nil {
				t.Fatalf("%s: %v (waited for the writer?)", name, err)
			}
			if len(page.IoCs) == 0 || page.Total == 0 {
				t.Errorf("%s: %d IoCs of %d", name, len(page.IoCs), page.Total)
			}
		}
		// Exports, TAXII's change order and bulk lookups too.
		streamed := 0
		if err := s.StreamIoCs(rctx, store.IoCFilter{}, store.IoCOrder{}, store.StreamColumns{WithSources: true},
			func(*store.IoCRow) error { streamed++; return nil }); err != nil || streamed != 20 {
			t.Fatalf("export: %d rows, %v (waited for the writer?)", streamed, err)
		}
		changed := 0
		if err := s.IoCChanges(rctx, store.IoCChangesQuery{WithText: true},
			func(*store.IoCChange) error { changed++; return nil }); err != nil || changed != 20 {
			t.Fatalf("changes: %d IoCs, %v (waited for the writer?)", changed, err)
		}
		found, err := s.IoCsByKeys(rctx, []store.IoCKey{{Type: ioc.Domain, Value: "w03.example"}})
		if err != nil || len(found) != 1 {
			t.Fatalf("lookup: %d found, %v (waited for the writer?)", len(found), err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
