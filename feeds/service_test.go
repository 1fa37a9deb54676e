package feeds_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// fakeRunner records what the service asks of the runner.
type fakeRunner struct {
	mu    sync.Mutex
	calls []string
	busy  bool
}

func (r *fakeRunner) record(call string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
}

func (r *fakeRunner) Schedule(f *store.Feed, runNow bool) error {
	if runNow {
		r.record("schedule and run")
	} else {
		r.record("schedule")
	}
	return nil
}
func (r *fakeRunner) Unschedule(int64)     { r.record("unschedule") }
func (r *fakeRunner) CancelDisabled(int64) { r.record("cancel disabled") }
func (r *fakeRunner) CancelDeleted(int64)  { r.record("cancel deleted") }
func (r *fakeRunner) CancelReset(int64)    { r.record("cancel reset") }
func (r *fakeRunner) RunAgain(int64)       { r.record("run again") }
func (r *fakeRunner) StartNow(context.Context, int64) (bool, error) {
	r.record("start now")
	return r.busy, nil
}

// taking returns the calls recorded since the last one and forgets them.
func (r *fakeRunner) taking() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	calls := r.calls
	r.calls = nil
	return calls
}

// tsvOnly is a registry of the TSV category alone, whose validation
// refuses one URL.
type tsvOnly struct{}

func (tsvOnly) Has(key string) bool { return key == store.CategoryTSV }
func (tsvOnly) Validate(_ context.Context, key string, feed source.Feed) error {
	if strings.Contains(feed.URL, "refused") {
		return store.Invalid("collectionUrl", "refused by the source")
	}
	return nil
}

// The service is what the API calls: it stores a change, announces it and
// tells the runner what it means, without a runner of its own.
func TestServiceTellsTheRunner(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		secrets, err := store.NewSecrets([]byte(strings.Repeat("s", 32)))
		if err != nil {
			t.Fatal(err)
		}
		runner := &fakeRunner{}
		bus := events.NewBus()
		evs, cancel := bus.Subscribe(0)
		defer cancel()
		svc, err := feeds.New(feeds.Options{Store: st, Secrets: secrets, Bus: bus, Sources: tsvOnly{}, Runner: runner})
		if err != nil {
			t.Fatal(err)
		}
		expect := func(what string, want ...string) {
			t.Helper()
			if got := runner.taking(); !slices.Equal(got, want) {
				t.Errorf("%s: the runner was asked %q, want %q", what, got, want)
			}
		}

		in := feeds.CustomFeedInput{Category: store.CategoryTSV, Name: "s", CollectionURL: "http://127.0.0.1/refused.tsv",
			PollingFrequency: 4, RetentionPeriod: 30}
		var verr *store.ValidationError
		if _, err := svc.CreateCustomFeed(ctx, in); !errors.As(err, &verr) || verr.Field != "collectionUrl" {
			t.Fatalf("a URL the source refuses: %v", err)
		}
		in.Category = "nope"
		if _, err := svc.CreateCustomFeed(ctx, in); !errors.As(err, &verr) || verr.Field != "category" {
			t.Fatalf("a category this build lacks: %v", err)
		}
		in.Category, in.CollectionURL = store.CategoryTSV, "http://127.0.0.1/f.tsv"
		f, err := svc.CreateCustomFeed(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		expect("create", "schedule and run")
		if ev := <-evs; ev.FeedID != f.ID || ev.Feed == nil {
			t.Errorf("create announced %+v", ev)
		}

		freq := 8
		if _, err := svc.UpdateFeed(ctx, f.ID, feeds.FeedUpdate{PollingFrequency: &freq}); err != nil {
			t.Fatal(err)
		}
		expect("a new polling frequency", "schedule")
		pass := "new"
		if _, err := svc.UpdateFeed(ctx, f.ID, feeds.FeedUpdate{Password: &pass}); err != nil {
			t.Fatal(err)
		}
		expect("new credentials", "run again")

		if _, err := svc.RunNow(ctx, f.ID); err != nil {
			t.Fatal(err)
		}
		runner.busy = true
		if _, err := svc.RunNow(ctx, f.ID); !errors.Is(err, feeds.ErrAlreadyRunning) {
			t.Errorf("run now of a busy feed: %v, want ErrAlreadyRunning", err)
		}
		expect("run now", "start now", "start now")

		if _, err := svc.SetEnabled(ctx, f.ID, false, true); err != nil {
			t.Fatal(err)
		}
		expect("disable", "unschedule", "cancel disabled")
		if err := svc.DeleteFeed(ctx, f.ID); err != nil {
			t.Fatal(err)
		}
		expect("delete", "unschedule", "cancel deleted")
		if _, err := st.Feed(ctx, f.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("deleted feed: %v", err)
		}
	})
}
