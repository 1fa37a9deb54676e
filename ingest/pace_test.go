package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// scripted is a source whose every poll is a function of the test: what a
// multi-list or constant-rate vendor source does, told apart from its
// HTTP, so that the runner's side is what is tested.
type scripted struct {
	mu    sync.Mutex
	polls []func(ctx context.Context, req source.Request, sink source.Sink) (string, error)
	n     int
}

// Fetch runs the next poll, which returns its final cursor.
func (s *scripted) Fetch(ctx context.Context, req source.Request, sink source.Sink) error {
	s.mu.Lock()
	poll := s.polls[s.n]
	s.n++
	s.mu.Unlock()
	return source.Finish(ctx, sink, func(sink source.Sink) (string, error) { return poll(ctx, req, sink) })
}

// premiumScripted registers src as the RISK_LIST source with rate (0: not
// paced), and returns the RISK_LIST feed once enabled and its first run
// (the script's first poll) ended.
func (h *harness) premiumScripted(src *scripted, rate float64) *store.Feed {
	h.t.Helper()
	ctx := context.Background()
	h.reg.Register(source.Kind{Key: string(premium.RiskList), Rate: rate,
		New: func(source.Env) source.Source { return src }})
	if err := h.m.EnsurePremiumFeeds(ctx); err != nil {
		h.t.Fatal(err)
	}
	f := h.premiumFeed(premium.RiskList)
	if _, err := h.m.UpdateFeed(ctx, f.ID, feeds.FeedUpdate{APIKey: ptr("rk")}); err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.m.SetEnabled(ctx, f.ID, true, false); err != nil {
		h.t.Fatal(err)
	}
	h.r.Wait()
	return f
}

// liveValues returns the values of the feed's sightings, sorted.
func (h *harness) liveValues(feedID int64) []string {
	h.t.Helper()
	rows, err := h.st.DB.QueryContext(context.Background(),
		"SELECT i.value FROM sightings s JOIN iocs i ON i.id = s.ioc_id WHERE s.feed_id = ?", feedID)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			h.t.Fatal(err)
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

func testIP(n int) ioc.Indicator {
	return ioc.Indicator{Kind: ioc.IP, Value: fmt.Sprintf("192.0.2.%d", n), Source: "L", Score: 50}
}

// pacedList is a poll of a source writing list L, values 1..size, at a
// constant rate, the way the risk-list source does: from the offset in its
// cursor ("offset pass-start"), until the sink says the share is written;
// at the list's end it names it complete since the pass start. paced
// records at which value the sink said so (0: never).
func pacedList(size int, paced *int) func(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
	return func(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
		off, start := 0, req.Started
		if f := strings.Fields(req.Cursor); len(f) == 2 {
			off, _ = strconv.Atoi(f[0])
			start, _ = time.Parse(time.RFC3339Nano, f[1])
		}
		cursor := func(off int) string { return strconv.Itoa(off) + " " + start.Format(time.RFC3339Nano) }
		*paced = 0
		for n := off + 1; n <= size; n++ {
			err := sink.Indicator(ctx, testIP(n))
			if err != nil && !errors.Is(err, source.ErrPaceReached) {
				return cursor(n - 1), err
			}
			if err != nil || n == size {
				sink.Backlog(int64(n), int64(size))
				if n == size {
					sink.ListComplete("L", start)
					if err == nil {
						return "", nil
					}
				}
				*paced = n
				if cerr := sink.Checkpoint(ctx, cursor(n)); cerr != nil {
					return cursor(n), cerr
				}
				return cursor(n), err
			}
		}
		return "", nil
	}
}

// TestConstantRateRuns: a constant-rate kind stores, per poll, its share
// of the rate (rate × the polling interval, rounded up); the source is
// told by source.ErrPaceReached on the indicator that used the share up; each
// run records the progress the source reported with the expected
// completion (the polls left × the interval); the list, written over
// polls, expires at its end what was last seen before its pass began (not
// before the last run began), also when the share ended on its last row.
func TestConstantRateRuns(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		h := newHarness(t, st, tsv.Options{})
		var paced int
		src := &scripted{polls: []func(context.Context, source.Request, source.Sink) (string, error){
			// A pass before: 192.0.2.100, no longer listed afterwards.
			func(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
				if err := sink.Indicator(ctx, ioc.Indicator{Kind: ioc.IP, Value: "192.0.2.100", Source: "L", Score: 50}); err != nil {
					return "", err
				}
				sink.ListComplete("L", req.Started)
				return "", nil
			},
			pacedList(12, &paced), pacedList(12, &paced),
		}}
		// 0.25 an hour, polled every 24 hours: a share of 6.
		f := h.premiumScripted(src, 0.25)
		if got := h.liveValues(f.ID); !slices.Equal(got, []string{"192.0.2.100"}) {
			t.Fatalf("after the earlier pass: %q", got)
		}

		h.clock.Add(24 * time.Hour)
		passStart := h.clock.Now()
		run := h.runNow(f.ID)
		want := passStart.Add(24 * time.Hour)
		if run.Stored != 6 || paced != 6 || run.BacklogWritten != 6 || run.BacklogTotal != 12 ||
			run.ExpectedCompletion == nil || run.ExpectedCompletion.Sub(want).Abs() > time.Millisecond ||
			!strings.Contains(run.Note, "this poll's share of 6 IoCs (0.25 an hour)") || run.ErrorKind != "" {
			t.Fatalf("first share: %+v (paced at %d), want 6 stored, 6/12, completion at %v", run, paced, want)
		}
		if got := h.liveValues(f.ID); len(got) != 7 || !slices.Contains(got, "192.0.2.100") {
			t.Errorf("after the first share: %q: the dropped value expired before the list was written whole", got)
		}
		if got := h.feed(f.ID); got.StatusMessage != store.MessageSuccess {
			t.Errorf("feed after a share: %q", got.StatusMessage)
		}

		// The second share ends on the list's last value: the list is
		// whole, and what the pass handed over in the first poll (last seen
		// before this run began) stays.
		h.clock.Add(24 * time.Hour)
		run = h.runNow(f.ID)
		if run.Stored != 6 || paced != 12 || run.BacklogWritten != 12 || run.BacklogTotal != 12 || run.ExpectedCompletion != nil {
			t.Fatalf("second share: %+v (paced at %d)", run, paced)
		}
		got := h.liveValues(f.ID)
		if len(got) != 12 || slices.Contains(got, "192.0.2.100") || !strings.Contains(run.Note, "1 IoCs no longer listed expired") {
			t.Errorf("after the pass: %q, note %q; want the 12 listed values only", got, run.Note)
		}
		checkConsistent(t, st)
	})
}

// TestConstantRateShare: the share is the rate times the polling interval
// rounded up, at least one, and smaller than a kind's per-poll limit takes
// its place.
func TestConstantRateShare(t *testing.T) {
	for name, tc := range map[string]struct {
		rate  float64
		every time.Duration
		share int64
	}{
		"default rate, daily": {DefaultWriteRate, 24 * time.Hour, 166667},
		"rounded up":          {0.1, 24 * time.Hour, 3},
		"at least one":        {0.01, time.Hour, 1},
		"hourly":              {6944.4, time.Hour, 6945},
	} {
		t.Run(name, func(t *testing.T) {
			if p := newConstantRate(tc.rate, tc.every); p == nil || p.share != tc.share {
				t.Errorf("share = %+v, want %d", p, tc.share)
			}
		})
	}
	if newConstantRate(0, time.Hour) != nil {
		t.Error("a zero rate paces")
	}
}

// TestPartialFailureRun: a source two of whose lists were read and one
// failed ends the run with the failure's status and a detail naming it;
// what the others brought is stored, the list read whole expires what it
// dropped, the failed one expires nothing; the cursor the source
// checkpointed is kept.
func TestPartialFailureRun(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		h := newHarness(t, st, tsv.Options{})
		ind := func(list, v string) ioc.Indicator {
			return ioc.Indicator{Kind: ioc.Domain, Value: v, Source: list, Score: 60}
		}
		src := &scripted{polls: []func(context.Context, source.Request, source.Sink) (string, error){
			func(ctx context.Context, _ source.Request, sink source.Sink) (string, error) {
				for _, i := range []ioc.Indicator{ind("A", "a1.example.com"), ind("A", "a2.example.com"),
					ind("B", "b1.example.com"), ind("B", "b2.example.com")} {
					if err := sink.Indicator(ctx, i); err != nil {
						return "", err
					}
				}
				sink.ListComplete("A", time.Time{})
				sink.ListComplete("B", time.Time{})
				return "poll-1", nil
			},
			func(ctx context.Context, _ source.Request, sink source.Sink) (string, error) {
				if err := sink.Indicator(ctx, ind("A", "a1.example.com")); err != nil {
					return "", err
				}
				sink.ListComplete("A", time.Time{})
				if err := sink.Indicator(ctx, ind("B", "b1.example.com")); err != nil {
					return "", err
				}
				// B broke off: not complete. The cursor goes with A's data.
				if err := sink.Checkpoint(ctx, "poll-2"); err != nil {
					return "", err
				}
				return "poll-2", ioc.Partial([]ioc.SubFailure{{Name: "list B",
					Err: ioc.Fail(ioc.SurpassedQueryLimit, errors.New("the server answered 429"))}})
			},
		}}
		f := h.premiumScripted(src, 0)
		if run := h.lastRun(f.ID); run.Stored != 4 || run.ErrorKind != "" {
			t.Fatalf("first run: %+v", run)
		}
		h.clock.Add(time.Hour)
		run := h.runNow(f.ID)
		if run.ErrorKind != string(ioc.SurpassedQueryLimit) || !strings.Contains(run.ErrorDetail, "list B failed: ") ||
			run.Stored != 2 || !strings.Contains(run.Note, "1 IoCs no longer listed expired (A)") {
			t.Fatalf("partial run: %+v", run)
		}
		if got := h.liveValues(f.ID); !slices.Equal(got, []string{"a1.example.com", "b1.example.com", "b2.example.com"}) {
			t.Errorf("after the partial run: %q; want a2 expired, b2 kept (B failed)", got)
		}
		if got := h.feed(f.ID); got.StatusMessage != string(ioc.SurpassedQueryLimit) || got.Cursor != "poll-2" {
			t.Errorf("feed after the partial run: %q, cursor %q", got.StatusMessage, got.Cursor)
		}
		checkConsistent(t, st)
	})
}
