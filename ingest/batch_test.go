package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

var sinkNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func sinkFeed(t *testing.T, s *store.Store) int64 {
	t.Helper()
	now := time.Now()
	f := &store.Feed{Name: "TSV_sink", Type: store.FeedCustom, Category: "TSV", Enabled: true, StatusMessage: "Success",
		PollingFrequency: 24, RetentionPeriod: 30, CreatedAt: now, UpdatedAt: now}
	if _, err := s.DB.NewInsert().Model(f).Returning("id").Exec(context.Background()); err != nil {
		t.Fatalf("insert feed: %v", err)
	}
	return f.ID
}

func domain(i int) ioc.Indicator {
	return ioc.Indicator{Kind: ioc.Domain, Value: fmt.Sprintf("h%d.example", i), Source: "s", Score: 50, Tags: []string{tsv.Tag}}
}

func storedIoCs(t *testing.T, s *store.Store) int {
	t.Helper()
	n, err := s.DB.NewSelect().Table("iocs").Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

func TestBatchSinkCounters(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := sinkFeed(t, s)
		var progress []ingest.RunStats
		sink := ingest.NewBatchSink(s, feed, 0, ingest.BatchOptions{BatchSize: 2, Retention: time.Hour,
			Now: func() time.Time { return sinkNow }, OnProgress: func(rs ingest.RunStats) { progress = append(progress, rs) }})
		for i := range 5 {
			if err := sink.Indicator(ctx, domain(i)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 25 {
			sink.Rejected(int64(100+i), fmt.Sprintf("bad row %d", i))
		}
		// The first full batch is written once the second is handed over;
		// the second may still be in flight.
		if n := storedIoCs(t, s); n != 2 && n != 4 {
			t.Errorf("stored before Flush = %d, want 2 or 4 (full batches)", n)
		}
		if err := sink.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		st := sink.Stats()
		if st.Fetched != 30 || st.Stored != 5 || st.Rejected != 25 || st.LimitReached {
			t.Errorf("stats = %+v", st)
		}
		if len(st.Rejections) != store.MaxRejections || st.Rejections[0] != (store.Rejection{Position: 100, Reason: "bad row 0"}) ||
			st.Rejections[19].Position != 119 {
			t.Errorf("rejections = %+v, want the first 20", st.Rejections)
		}
		if len(progress) != 3 || progress[0].Stored != 2 || progress[2].Stored != 5 {
			t.Errorf("progress = %+v, want stored 2, 4, 5", progress)
		}
		if n := storedIoCs(t, s); n != 5 {
			t.Errorf("stored = %d, want 5", n)
		}
	})
}

func TestBatchSinkLimit(t *testing.T) {
	domains := func(n int) []ioc.Indicator {
		out := make([]ioc.Indicator, n)
		for i := range out {
			out[i] = domain(i)
		}
		return out
	}
	tests := map[string]struct {
		batchSize   int
		limit       int64
		inds        []ioc.Indicator
		wantStopAt  int // the call (1-based) that returns ErrLimitReached
		wantStored  int64
		wantFetched int64
	}{
		"limit inside a batch": {100, 3, []ioc.Indicator{domain(1), domain(2), domain(3), domain(4), domain(5)}, 3, 3, 3},
		"limit at batch end":   {3, 3, []ioc.Indicator{domain(1), domain(2), domain(3), domain(4)}, 3, 3, 3},
		"repeats do not count": {100, 3, []ioc.Indicator{domain(1), domain(1), domain(2), domain(3), domain(4)}, 4, 3, 4},
		// Batches written in the background before the limit comes near.
		"after pipelined batches": {2, 7, domains(12), 7, 7, 7},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			storetest.EachDB(t, func(t *testing.T, s *store.Store) {
				ctx := context.Background()
				sink := ingest.NewBatchSink(s, sinkFeed(t, s), 0, ingest.BatchOptions{BatchSize: tc.batchSize, Limit: tc.limit,
					Retention: time.Hour, Now: func() time.Time { return sinkNow }})
				stopAt := 0
				for i, ind := range tc.inds {
					if err := sink.Indicator(ctx, ind); err != nil {
						if !errors.Is(err, source.ErrLimitReached) {
							t.Fatal(err)
						}
						stopAt = i + 1
						break
					}
				}
				if stopAt != tc.wantStopAt {
					t.Errorf("ErrLimitReached at call %d, want %d", stopAt, tc.wantStopAt)
				}
				if err := sink.Indicator(ctx, domain(99)); !errors.Is(err, source.ErrLimitReached) {
					t.Errorf("after the limit Indicator = %v, want ErrLimitReached", err)
				}
				st := sink.Stats()
				if st.Stored != tc.wantStored || st.Fetched != tc.wantFetched || !st.LimitReached {
					t.Errorf("stats = %+v", st)
				}
				if n := storedIoCs(t, s); int64(n) != tc.wantStored {
					t.Errorf("iocs = %d, want %d", n, tc.wantStored)
				}
			})
		})
	}
}

func TestBatchSinkCheckpoint(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := sinkFeed(t, s)
		sink := ingest.NewBatchSink(s, feed, 0, ingest.BatchOptions{BatchSize: 100, Retention: time.Hour})
		for i := range 3 {
			if err := sink.Indicator(ctx, domain(i)); err != nil {
				t.Fatal(err)
			}
		}
		if n := storedIoCs(t, s); n != 0 {
			t.Fatalf("stored before the checkpoint = %d", n)
		}
		if err := sink.Checkpoint(ctx, "line:3"); err != nil {
			t.Fatal(err)
		}
		if err := sink.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		var f store.Feed
		if err := s.DB.NewSelect().Model(&f).Where("id = ?", feed).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if f.Cursor != "line:3" || storedIoCs(t, s) != 3 || f.LastIngestion == nil {
			t.Errorf("after Checkpoint: cursor %q, %d IoCs, last ingestion %v", f.Cursor, storedIoCs(t, s), f.LastIngestion)
		}
	})
}

// TestBatchSinkFromTSV reads a sample file through tsv.Read into the sink.
func TestBatchSinkFromTSV(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := sinkFeed(t, s)
		var run store.FeedRun
		run.FeedID, run.StartedAt = feed, time.Now()
		if _, err := s.DB.NewInsert().Model(&run).Returning("id").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		sink := ingest.NewBatchSink(s, feed, run.ID, ingest.BatchOptions{BatchSize: 3, Retention: 24 * time.Hour})
		for _, name := range []string{"tsv/testdata/good.tsv", "tsv/testdata/bad.tsv"} {
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tsv.Read(ctx, f, sink)
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := sink.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		st := sink.Stats()
		if st.Fetched != 28 || st.Stored != 8 || st.Rejected != 20 {
			t.Errorf("stats = %+v, want 28 fetched, 8 stored, 20 rejected", st)
		}
		if err := s.DB.NewSelect().Model(&run).Where("id = ?", run.ID).Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if run.Stored != 8 {
			t.Errorf("run stored = %d, want 8", run.Stored)
		}
		// 192.0.2.10 comes from two sources: one IoC, two sightings.
		if n := storedIoCs(t, s); n != 7 {
			t.Errorf("iocs = %d, want 7", n)
		}
		var i store.IoC
		if err := s.DB.NewSelect().Model(&i).Where("value = ?", "192.0.2.10").Scan(ctx); err != nil {
			t.Fatal(err)
		}
		if i.Score != 75 || len(i.Tags) != 1 || i.Tags[0] != tsv.Tag {
			t.Errorf("192.0.2.10 = %+v", i)
		}
	})
}

// failWrites makes the store refuse, with an error inside the transaction,
// every IoC whose value starts with "fail"; the returned func lifts it.
func failWrites(t *testing.T, s *store.Store) (lift func()) {
	t.Helper()
	ctx := context.Background()
	create := []string{`CREATE TRIGGER fail_write BEFORE INSERT ON iocs WHEN NEW.value LIKE 'fail%'
BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`}
	drop := []string{`DROP TRIGGER fail_write`}
	if s.Dialect == store.Postgres {
		create = []string{`CREATE FUNCTION fail_write() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN IF NEW.value LIKE 'fail%' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$`,
			`CREATE TRIGGER fail_write BEFORE INSERT ON iocs FOR EACH ROW EXECUTE FUNCTION fail_write()`}
		drop = []string{`DROP TRIGGER fail_write ON iocs`, `DROP FUNCTION fail_write()`}
	}
	for _, q := range create {
		if _, err := s.DB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		for _, q := range drop {
			if _, err := s.DB.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func feedCursor(t *testing.T, s *store.Store, feed int64) string {
	t.Helper()
	var f store.Feed
	if err := s.DB.NewSelect().Model(&f).Where("id = ?", feed).Scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	return f.Cursor
}

func failing(i int) ioc.Indicator {
	return ioc.Indicator{Kind: ioc.Domain, Value: fmt.Sprintf("fail%d.example", i), Source: "s", Score: 50}
}

// TestBatchSinkWriteError: a batch written in the background fails; the
// error comes back from the next call that hands over a batch, from
// Checkpoint and from Flush; nothing after the failed batch is written, its
// cursor included, and once the cause is gone Flush writes everything.
func TestBatchSinkWriteError(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := sinkFeed(t, s)
		lift := failWrites(t, s)
		sink := ingest.NewBatchSink(s, feed, 0, ingest.BatchOptions{BatchSize: 2, Retention: time.Hour})
		// The first batch is handed over at once: its failure is not known yet.
		for _, ind := range []ioc.Indicator{domain(0), failing(1)} {
			if err := sink.Indicator(ctx, ind); err != nil {
				t.Fatalf("Indicator before the write ended = %v", err)
			}
		}
		err := sink.Indicator(ctx, domain(2))
		if err == nil {
			err = sink.Indicator(ctx, domain(3)) // fills the second batch
		}
		if err == nil || !strings.Contains(err.Error(), "refused by the test") {
			t.Fatalf("Indicator after a failed write = %v, want the write's error", err)
		}
		if err := sink.Checkpoint(ctx, "line:4"); err == nil {
			t.Error("Checkpoint after a failed write = nil")
		}
		if err := sink.Flush(ctx); err == nil {
			t.Error("Flush after a failed write = nil")
		}
		if n, c := storedIoCs(t, s), feedCursor(t, s, feed); n != 0 || c != "" {
			t.Errorf("after the failures: %d IoCs, cursor %q; want none", n, c)
		}
		if st := sink.Stats(); st.Stored != 0 || st.Fetched != 4 {
			t.Errorf("stats = %+v, want 4 fetched, 0 stored", st)
		}
		lift()
		if err := sink.Checkpoint(ctx, "line:4"); err != nil {
			t.Fatal(err)
		}
		if err := sink.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if n, c := storedIoCs(t, s), feedCursor(t, s, feed); n != 4 || c != "line:4" {
			t.Errorf("after the retry: %d IoCs, cursor %q; want 4, line:4", n, c)
		}
		if st := sink.Stats(); st.Stored != 4 {
			t.Errorf("stats = %+v, want 4 stored", st)
		}
	})
}

// TestBatchSinkCheckpointWithItsData: a checkpoint's cursor commits in the
// transaction of the data before it: when that fails, so does the cursor.
func TestBatchSinkCheckpointWithItsData(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := sinkFeed(t, s)
		failWrites(t, s)
		sink := ingest.NewBatchSink(s, feed, 0, ingest.BatchOptions{BatchSize: 100, Retention: time.Hour})
		for _, ind := range []ioc.Indicator{domain(0), failing(1)} {
			if err := sink.Indicator(ctx, ind); err != nil {
				t.Fatal(err)
			}
		}
		if err := sink.Checkpoint(ctx, "line:2"); err != nil {
			t.Fatalf("Checkpoint = %v before any write", err)
		}
		if err := sink.Flush(ctx); err == nil {
			t.Fatal("Flush = nil, want the failed write's error")
		}
		if n, c := storedIoCs(t, s), feedCursor(t, s, feed); n != 0 || c != "" {
			t.Errorf("%d IoCs, cursor %q; want neither", n, c)
		}
	})
}

// TestBatchSinkCancelled: a write under a cancelled context fails whole and
// is written again, with nothing lost, by a Flush with a live one.
func TestBatchSinkCancelled(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := sinkFeed(t, s)
		sink := ingest.NewBatchSink(s, feed, 0, ingest.BatchOptions{BatchSize: 2, Retention: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		for i := range 2 {
			if err := sink.Indicator(ctx, domain(i)); err != nil {
				t.Fatalf("Indicator %d = %v", i, err)
			}
		}
		if err := sink.Flush(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("Flush = %v, want context.Canceled", err)
		}
		if n := storedIoCs(t, s); n != 0 {
			t.Errorf("%d IoCs written under a cancelled context", n)
		}
		if err := sink.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n, st := storedIoCs(t, s), sink.Stats(); n != 2 || st.Stored != 2 {
			t.Errorf("%d IoCs, stats %+v after Flush; want 2", n, st)
		}
	})
}

// TestBatchSinkSettle: after a failure, Settle writes what came before the
// last checkpoint, with its cursor, and drops what came after it.
func TestBatchSinkSettle(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := sinkFeed(t, s)
		sink := ingest.NewBatchSink(s, feed, 0, ingest.BatchOptions{BatchSize: 3, Retention: time.Hour})
		steps := []func() error{
			func() error { return sink.Indicator(ctx, domain(0)) },
			func() error { return sink.Checkpoint(ctx, "line:1") },
			func() error { return sink.Indicator(ctx, domain(1)) },
			func() error { return sink.Indicator(ctx, domain(2)) }, // a full batch, handed over with line:1
			func() error { return sink.Checkpoint(ctx, "line:3") },
			func() error { return sink.Indicator(ctx, domain(3)) },
			func() error { return sink.Indicator(ctx, domain(4)) },
		}
		for i, step := range steps {
			if err := step(); err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
		}
		if err := sink.Settle(ctx); err != nil {
			t.Fatal(err)
		}
		if n, c, st := storedIoCs(t, s), feedCursor(t, s, feed), sink.Stats(); n != 3 || c != "line:3" || st.Stored != 3 {
			t.Errorf("after Settle: %d IoCs, cursor %q, stats %+v; want 3, line:3", n, c, st)
		}
		if err := sink.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if n := storedIoCs(t, s); n != 3 {
			t.Errorf("Flush after Settle wrote what Settle dropped: %d IoCs", n)
		}
	})
}
