package ingest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// removalIoCs is how many addresses of 11.22.0.0/16 the removal tests
// store: more than one page of a removal (5,000), so a removal
// can be caught between two pages.
const removalIoCs = 6000

// removalHarness stores removalIoCs addresses that an own list "corp"
// (11.22.0.0/16) flags.
func removalHarness(t *testing.T, st *store.Store) (*harness, *store.Feed) {
	t.Helper()
	h := newHarnessWith(t, st, tsv.Options{ChunkLines: 2000}, func(o *Options) { o.BatchSize = 1000 })
	// The first start sweeps the dropping built-in lists (nothing stored
	// yet); the tests hook the removals after it.
	h.r.Allowlist().WaitRemovals()
	var body strings.Builder
	for i := range removalIoCs {
		fmt.Fprintf(&body, "ip\t11.22.%d.%d\tsrc\t90\n", i/250, i%250+1)
	}
	body.WriteString("ip\t203.0.113.9\tsrc\t90\n")
	if _, err := h.m.Allowlist().ImportWarninglist(context.Background(), "corp", []byte("11.22.0.0/16\n"), "flag"); err != nil {
		t.Fatal(err)
	}
	f := h.create(newTSVServer(t, body.String()).URL+"/feed.tsv", nil)
	h.r.Wait()
	if run := h.lastRun(f.ID); run.Stored != removalIoCs+1 {
		t.Fatalf("stored %d, want %d", run.Stored, removalIoCs+1)
	}
	return h, f
}

func (h *harness) corpIoCs() int {
	h.t.Helper()
	return h.count("SELECT COUNT(*) FROM iocs WHERE value LIKE '11.22.%'")
}

func removing(t *testing.T, a *feeds.Allowlist, name string) bool {
	t.Helper()
	states, err := a.Warninglists(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range states {
		if l.Name == name {
			return l.Removing
		}
	}
	t.Fatalf("no list %s", name)
	return false
}

// TestWarninglistDropRemovesInTheBackground: turning a list to drop
// answers before any stored IoC it matches is removed (the removal is held
// at its first page), says the list is removing meanwhile, and the IoCs
// are gone once the removal ran, in pages, with the flag cleared.
func TestWarninglistDropRemovesInTheBackground(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h, _ := removalHarness(t, st)
		in := h.r.Allowlist()
		release := make(chan struct{})
		var pages sync.WaitGroup
		pages.Add(1)
		var once sync.Once
		in.removalPage = func(ctx context.Context, lists []string) {
			once.Do(func() { pages.Done(); <-release })
		}
		if err := h.m.Allowlist().SetWarninglistAction(ctx, "corp", "drop"); err != nil {
			t.Fatal(err)
		}
		pages.Wait() // the removal started and is held before its first page
		if n := h.corpIoCs(); n != removalIoCs {
			t.Errorf("the mutation returned with %d of %d IoCs gone", removalIoCs-n, removalIoCs)
		}
		if !removing(t, h.m.Allowlist(), "corp") {
			t.Error("corp is not removing while its removal runs")
		}
		close(release)
		in.WaitRemovals()
		if n := h.corpIoCs(); n != 0 {
			t.Errorf("%d IoCs of corp left after the removal", n)
		}
		if n := h.count("SELECT COUNT(*) FROM iocs"); n != 1 {
			t.Errorf("%d IoCs left, want the one corp does not match", n)
		}
		if removing(t, h.m.Allowlist(), "corp") {
			t.Error("corp is removing still after its removal finished")
		}
		checkConsistent(t, st)
	})
}

// TestWarninglistRemovalStopsWhenTurnedBack: a list turned to flag while
// its IoCs are removed stops being removed before the next page.
func TestWarninglistRemovalStopsWhenTurnedBack(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h, _ := removalHarness(t, st)
		in := h.r.Allowlist()
		page := 0
		in.removalPage = func(ctx context.Context, lists []string) {
			page++
			if page == 2 { // one page of 5,000 removed
				if err := h.m.Allowlist().SetWarninglistAction(ctx, "corp", "flag"); err != nil {
					t.Error(err)
				}
			}
		}
		if err := h.m.Allowlist().SetWarninglistAction(ctx, "corp", "drop"); err != nil {
			t.Fatal(err)
		}
		in.WaitRemovals()
		if n := h.corpIoCs(); n != removalIoCs-5000 {
			t.Errorf("%d IoCs of corp left, want %d: the removal went on after corp turned to flag", n, removalIoCs-5000)
		}
		if removing(t, h.m.Allowlist(), "corp") {
			t.Error("corp, turned to flag, is removing still")
		}
	})
}

// TestWarninglistRemovalResumesAtStart: a removal cut short by a stop is
// pending still, and the next start of a runner finishes it.
func TestWarninglistRemovalResumesAtStart(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h, _ := removalHarness(t, st)
		in := h.r.Allowlist()
		stopped := make(chan struct{})
		page := 0
		in.removalPage = func(ctx context.Context, lists []string) {
			page++
			if page == 2 { // one page removed: stop the runner meanwhile
				go func() { _ = h.r.Stop(context.Background()); close(stopped) }()
				<-ctx.Done()
			}
		}
		if err := h.m.Allowlist().SetWarninglistAction(ctx, "corp", "drop"); err != nil {
			t.Fatal(err)
		}
		<-stopped
		if n := h.corpIoCs(); n != removalIoCs-5000 {
			t.Fatalf("%d IoCs of corp left after the stop, want %d", n, removalIoCs-5000)
		}
		if pending, err := st.WarninglistRemovalPending(ctx, "corp"); err != nil || !pending {
			t.Fatalf("corp's removal pending after the stop = %v, %v; want true", pending, err)
		}

		h2 := newHarnessWith(t, st, tsv.Options{}, nil)
		h2.r.Allowlist().WaitRemovals()
		if n := h2.corpIoCs(); n != 0 {
			t.Errorf("%d IoCs of corp left after the next start", n)
		}
		if removing(t, h2.m.Allowlist(), "corp") {
			t.Error("corp is removing still after the next start finished it")
		}
	})
}
