package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest"
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
		if n := storedIoCs(t, s); n != 4 {
			t.Errorf("stored before Flush = %d, want 4 (two full batches)", n)
		}
		if err := sink.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		st := sink.Stats()
		if st.Fetched != 30 || st.Stored != 5 || st.Rejected != 25 || st.LimitReached {
			t.Errorf("stats = %+v", st)
		}
		if len(st.Rejections) != ingest.MaxRejections || st.Rejections[0] != (store.Rejection{Position: 100, Reason: "bad row 0"}) ||
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
	tests := map[string]struct {
		batchSize   int
		inds        []ioc.Indicator
		wantStopAt  int // the call (1-based) that returns ErrLimitReached
		wantStored  int64
		wantFetched int64
	}{
		"limit inside a batch": {100, []ioc.Indicator{domain(1), domain(2), domain(3), domain(4), domain(5)}, 3, 3, 3},
		"limit at batch end":   {3, []ioc.Indicator{domain(1), domain(2), domain(3), domain(4)}, 3, 3, 3},
		"repeats do not count": {100, []ioc.Indicator{domain(1), domain(1), domain(2), domain(3), domain(4)}, 4, 3, 4},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			storetest.EachDB(t, func(t *testing.T, s *store.Store) {
				ctx := context.Background()
				sink := ingest.NewBatchSink(s, sinkFeed(t, s), 0, ingest.BatchOptions{BatchSize: tc.batchSize, Limit: 3,
					Retention: time.Hour, Now: func() time.Time { return sinkNow }})
				stopAt := 0
				for i, ind := range tc.inds {
					if err := sink.Indicator(ctx, ind); err != nil {
						if !errors.Is(err, ingest.ErrLimitReached) {
							t.Fatal(err)
						}
						stopAt = i + 1
						break
					}
				}
				if stopAt != tc.wantStopAt {
					t.Errorf("ErrLimitReached at call %d, want %d", stopAt, tc.wantStopAt)
				}
				if err := sink.Indicator(ctx, domain(99)); !errors.Is(err, ingest.ErrLimitReached) {
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
