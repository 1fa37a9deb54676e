package ingest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/events/eventstest"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// removalPages records the pages of the removals an allowlist runs: the
// lists each page removes for.
type removalPages struct {
	mu    sync.Mutex
	pages [][]string
}

func (p *removalPages) hook(_ context.Context, lists []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pages = append(p.pages, lists)
}

func (p *removalPages) seen() [][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.pages)
}

// newHookedHarness starts a runner on st (with bus, or one of its own)
// whose allowlist calls hook before each page of a removal from the
// start on, and waits for the removals its start began.
func newHookedHarness(t *testing.T, st *store.Store, bus *events.Bus, hook func(context.Context, []string)) *harness {
	t.Helper()
	if bus == nil {
		bus = events.NewBus()
	}
	h := newHarnessWith(t, st, tsv.Options{ChunkLines: 2000}, func(o *Options) {
		o.BatchSize = 1000
		o.Bus = bus
		o.Allowlist = NewAllowlist(st, bus, o.Log)
		o.Allowlist.removalPage = hook
		// Only the starts and the calls of the tests remove.
		o.ReconcileInterval = time.Hour
	})
	h.r.Allowlist().WaitRemovals()
	return h
}

// storeUnlisted stores IP addresses for feed as a run did before a list
// dropped them (an older version of it, another default): through a sink
// that applies no allowlist.
func (h *harness) storeUnlisted(feedID int64, values ...string) {
	h.t.Helper()
	ctx := context.Background()
	sink := NewBatchSink(h.st, feedID, 0, BatchOptions{Retention: time.Hour})
	for _, v := range values {
		if err := sink.Indicator(ctx, ioc.Indicator{Kind: ioc.IP, Value: v, Source: "s", Score: 50}); err != nil {
			h.t.Fatal(err)
		}
	}
	if err := sink.Flush(ctx); err != nil {
		h.t.Fatal(err)
	}
}

// droppingBuiltins are the built-in lists that drop by default, by name.
func droppingBuiltins() []string {
	var out []string
	for _, l := range allowlist.Builtin() {
		if l.Default == allowlist.Drop {
			out = append(out, l.Name)
		}
	}
	slices.Sort(out)
	return out
}

// checkSwept fails unless the rows of the built-in lists names record
// their versions and entry counts as swept, with no removal pending.
func checkSwept(t *testing.T, st *store.Store, names ...string) {
	t.Helper()
	rows, err := st.Warninglists(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]store.Warninglist{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	for _, l := range allowlist.Builtin() {
		if !slices.Contains(names, l.Name) {
			continue
		}
		r, ok := byName[l.Name]
		if !ok || !r.Swept(sweepOf(l)) || r.RemovalPending {
			t.Errorf("%s: row %+v, want %d entries of version %d swept and nothing pending", l.Name, r, l.Entries, l.Version)
		}
	}
}

// TestStartSweepsOnlyChangedBuiltinLists: a fresh database sweeps its
// dropping built-in lists once and records their versions; a restart with
// nothing changed runs no removal at all (what they match, stored before,
// stays); a list whose recorded version differs, or that has no row, is
// swept once at the next start, both in one walk, and recorded, and the
// start after that removes nothing again.
func TestStartSweepsOnlyChangedBuiltinLists(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		first := &removalPages{}
		h := newHookedHarness(t, st, nil, first.hook)
		// Nothing is stored: one page, reading nothing, for every list.
		if got := first.seen(); len(got) != 1 || !slices.Equal(got[0], droppingBuiltins()) {
			t.Errorf("pages of the first start = %q, want one for %q", got, droppingBuiltins())
		}
		checkSwept(t, st, droppingBuiltins()...)
		if n := h.count("SELECT COUNT(*) FROM warninglists WHERE action <> ''"); n != 0 {
			t.Errorf("%d built-in lists have an action stored: a sweep's row must keep the default in force", n)
		}

		f := h.create("http://127.0.0.1:1/feed.tsv", nil)
		h.r.Wait()
		// reserved and public-dns drop these: stored by an older version.
		stored := []string{"10.1.2.3", "203.0.113.9", "8.8.8.8"}
		h.storeUnlisted(f.ID, stored...)
		if err := h.r.Stop(ctx); err != nil {
			t.Fatal(err)
		}

		same := &removalPages{}
		h = newHookedHarness(t, st, nil, same.hook)
		if got := same.seen(); len(got) != 0 {
			t.Errorf("a restart with nothing changed read %d pages of IoCs: %q", len(got), got)
		}
		if got := h.storedValues(); !slices.Equal(got, stored) {
			t.Errorf("stored after a restart with nothing changed = %q, want %q", got, stored)
		}
		if err := h.r.Stop(ctx); err != nil {
			t.Fatal(err)
		}

		// An upgrade: reserved ships another version than the one swept,
		// public-dns is new to the database (no row).
		if _, err := st.DB.ExecContext(ctx, "UPDATE warninglists SET swept_version = swept_version - 1 WHERE name = 'reserved'"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.DB.ExecContext(ctx, "DELETE FROM warninglists WHERE name = 'public-dns'"); err != nil {
			t.Fatal(err)
		}
		upgraded := &removalPages{}
		h = newHookedHarness(t, st, nil, upgraded.hook)
		if got := upgraded.seen(); len(got) != 1 || !slices.Equal(got[0], []string{"public-dns", "reserved"}) {
			t.Errorf("pages after the upgrade = %q, want one walk for public-dns and reserved", got)
		}
		if got := h.storedValues(); !slices.Equal(got, []string{"203.0.113.9"}) {
			t.Errorf("stored after the upgrade's sweep = %q, want what no dropping list matches", got)
		}
		checkSwept(t, st, droppingBuiltins()...)
		checkConsistent(t, st)
		if err := h.r.Stop(ctx); err != nil {
			t.Fatal(err)
		}

		again := &removalPages{}
		newHookedHarness(t, st, nil, again.hook)
		if got := again.seen(); len(got) != 0 {
			t.Errorf("the start after the sweep read %d pages: %q", len(got), got)
		}
	})
}

// TestRemovalOneWalkForSeveralLists: lists of different kinds turned to
// drop together are removed in one walk over the stored IoCs (one page per
// 5,000 IoCs read, each for all the lists), which removes exactly what
// each list matches, URLs on a dropped domain included, and leaves the
// rest; own lists record no sweep.
func TestRemovalOneWalkForSeveralLists(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		pages := &removalPages{}
		h := newHookedHarness(t, st, nil, pages.hook)
		const (
			badMD5  = "0123456789abcdef0123456789abcdef"
			goodMD5 = "fedcba9876543210fedcba9876543210"
		)
		var body strings.Builder
		for i := range removalIoCs {
			fmt.Fprintf(&body, "ip\t11.22.%d.%d\tsrc\t90\n", i/250, i%250+1)
		}
		for _, row := range []string{"ip\t203.0.113.9", "domain\tbad.example", "domain\tsub.bad.example",
			"domain\tgood.example", "url\thttps://sub.bad.example/x", "url\thttps://good.example/x",
			"md5-hash\t" + badMD5, "md5-hash\t" + goodMD5} {
			body.WriteString(row + "\tsrc\t90\n")
		}
		a := h.m.Allowlist()
		for name, content := range map[string]string{
			"corp": "11.22.0.0/16\n",
			// A MISP list of domains only: it drops the hosts of URLs too.
			"hosts":  `{"name": "hosts", "description": "d", "version": 2, "type": "hostname", "list": ["bad.example"], "matching_attributes": ["domain"]}`,
			"hashes": badMD5 + "\n",
		} {
			if _, err := a.ImportWarninglist(ctx, name, []byte(content), "flag"); err != nil {
				t.Fatal(err)
			}
		}
		f := h.create(newTSVServer(t, body.String()).URL+"/feed.tsv", nil)
		h.r.Wait()
		if run := h.lastRun(f.ID); run.Stored != removalIoCs+8 {
			t.Fatalf("stored %d, want %d", run.Stored, removalIoCs+8)
		}
		pages.mu.Lock()
		pages.pages = nil
		pages.mu.Unlock()

		// Marked as the service marks them, then removed at once.
		for _, name := range []string{"corp", "hosts", "hashes"} {
			if err := st.SetOwnWarninglistAction(ctx, name, "drop"); err != nil {
				t.Fatal(err)
			}
		}
		in := h.r.Allowlist()
		in.RemovePendingInBackground(ctx)
		in.WaitRemovals()

		want := []string{"corp", "hashes", "hosts"}
		got := pages.seen()
		if len(got) != 2 || !slices.Equal(got[0], want) || !slices.Equal(got[1], want) {
			t.Errorf("pages = %q, want two (%d IoCs), each for %q", got, removalIoCs+8, want)
		}
		if got, want := h.storedValues(), []string{"203.0.113.9", goodMD5, "good.example", "https://good.example/x"}; !slices.Equal(got, want) {
			t.Errorf("stored after the removal = %q, want %q", got, want)
		}
		rows, err := st.Warninglists(ctx, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if r.RemovalPending || !r.Builtin && (r.SweptVersion != nil || r.SweptEntries != nil) {
				t.Errorf("%s after the removal: pending %v, swept %v/%v", r.Name, r.RemovalPending, r.SweptVersion, r.SweptEntries)
			}
		}
		checkConsistent(t, st)
	})
}

// TestStartSweepsOnceAcrossInstances: two instances starting on one
// PostgreSQL database with a built-in list to sweep do not both sweep: the
// second finds the removal lock taken and returns, and once the first
// recorded the sweep, a start of the second removes nothing either.
func TestStartSweepsOnceAcrossInstances(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	a, b := eventstest.NewInstance(t, dsn), eventstest.NewInstance(t, dsn)
	ctx := context.Background()
	h := newHookedHarness(t, a.Store, a.Bus, nil)
	f := h.create("http://127.0.0.1:1/feed.tsv", nil)
	h.r.Wait()
	h.storeUnlisted(f.ID, "10.1.2.3", "203.0.113.9")
	if err := h.r.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Store.DB.ExecContext(ctx, "UPDATE warninglists SET swept_version = swept_version - 1 WHERE name = 'reserved'"); err != nil {
		t.Fatal(err)
	}

	// A holds its removal at its first page, with the lock taken.
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var aPages removalPages
	ha := newHarnessWith(t, a.Store, tsv.Options{}, func(o *Options) {
		o.Bus = a.Bus
		o.Allowlist = NewAllowlist(a.Store, a.Bus, o.Log)
		o.Allowlist.removalPage = func(ctx context.Context, lists []string) {
			aPages.hook(ctx, lists)
			once.Do(func() { close(held); <-release })
		}
		o.ReconcileInterval = time.Hour
	})
	<-held
	bPages := &removalPages{}
	hb := newHookedHarness(t, b.Store, b.Bus, bPages.hook)
	if got := bPages.seen(); len(got) != 0 {
		t.Errorf("B swept too while A held the removal: %q", got)
	}
	close(release)
	ha.r.Allowlist().WaitRemovals()
	if got := aPages.seen(); len(got) != 1 || !slices.Equal(got[0], []string{"reserved"}) {
		t.Errorf("A's pages = %q, want one for reserved", got)
	}
	if got := ha.storedValues(); !slices.Equal(got, []string{"203.0.113.9"}) {
		t.Errorf("stored after A's sweep = %q", got)
	}
	checkSwept(t, a.Store, droppingBuiltins()...)

	if err := hb.r.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	newHookedHarness(t, b.Store, b.Bus, bPages.hook)
	if got := bPages.seen(); len(got) != 0 {
		t.Errorf("B swept after A recorded the sweep: %q", got)
	}
}
