package notify_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ingest"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/notify"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// eachDSN runs fn per dialect with the address of a new database that
// several stores may open, as several instances (or one restarted) do.
func eachDSN(t *testing.T, fn func(t *testing.T, dsn string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, "sqlite:"+filepath.Join(t.TempDir(), "tifeeds.db")) })
	t.Run("postgres", func(t *testing.T) { fn(t, storetest.NewPostgresDSN(t)) })
}

// openStore opens and migrates the database at dsn; the caller closes it.
func openStore(t *testing.T, dsn string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Migrate(context.Background()); err != nil {
		st.Close()
		t.Fatal(err)
	}
	return st
}

// ingestOnly writes inds for feed through the runner's batch sink with
// the instance's asset watch, and matches nothing: the covering
// indicators are left pending.
func ingestOnly(t *testing.T, e *env, feed *store.Feed, inds ...ioc.Indicator) {
	t.Helper()
	ctx := context.Background()
	sink := ingest.NewBatchSink(e.st, feed.ID, 0, ingest.BatchOptions{Retention: 30 * 24 * time.Hour, Now: e.clock.Now, Watch: e.assets})
	for _, ind := range inds {
		if err := sink.Indicator(ctx, ind); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

func countRows(t *testing.T, st *store.Store, table string) int {
	t.Helper()
	n, err := st.DB.NewSelect().Table(table).Count(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}

// watchedIPs are n IPs of 198.51.100.0/24 and as many outside it.
func watchedIPs(n int) []ioc.Indicator {
	var out []ioc.Indicator
	for i := 1; i <= n; i++ {
		out = append(out, ioc.Indicator{Kind: ioc.IP, Value: fmt.Sprintf("198.51.100.%d", i), Score: 70, Tags: []string{"c2"}},
			ioc.Indicator{Kind: ioc.IP, Value: fmt.Sprintf("203.0.113.%d", i), Score: 70})
	}
	return out
}

// Two instances draining the same pending asset sightings at once record
// each hit, and notify it, exactly once; a sighting reported by three runs
// is one hit.
func TestPendingAssetSightingsDrainedOnceByRacingInstances(t *testing.T) {
	eachDSN(t, func(t *testing.T, dsn string) {
		const n, runs = 250, 3
		c := newClock()
		a, b := openStore(t, dsn), openStore(t, dsn)
		defer a.Close()
		defer b.Close()
		ea, eb := newEnv(t, a, c), newEnv(t, b, c)
		acme := newTenant(t, a, "Acme")
		if _, err := ea.assets.Add(tenantCtx(acme), acme, []string{"198.51.100.0/24"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := ea.channels.Create(tenantCtx(acme), notify.ChannelInput{Kind: store.ChannelWebhook, Name: "hits",
			Target: []string{"https://hooks.example.org/x"}, Events: []string{store.EventAssetHit}}); err != nil {
			t.Fatal(err)
		}
		if err := eb.assets.Load(context.Background()); err != nil {
			t.Fatal(err)
		}
		feed := newFeed(t, a, "botnet")
		for range runs {
			ingestOnly(t, ea, feed, watchedIPs(n)...)
		}
		if got := countRows(t, a, "asset_sightings_pending"); got != n*runs {
			t.Fatalf("%d pending asset sightings, want %d (the covering IPs of %d runs)", got, n*runs, runs)
		}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, e := range []*env{ea, eb} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = e.assets.Flush(context.Background())
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := countRows(t, a, "asset_sightings_pending"); got != 0 {
			t.Fatalf("%d pending asset sightings left after both drained", got)
		}
		if got := countRows(t, a, "asset_hits"); got != n {
			t.Fatalf("%d hits, want %d", got, n)
		}
		seen := map[string]bool{}
		for _, m := range outbox(t, a) {
			v, _ := data(m)["iocValue"].(string)
			if seen[v] {
				t.Fatalf("%s notified twice", v)
			}
			seen[v] = true
		}
		if len(seen) != n {
			t.Fatalf("%d notifications, want %d", len(seen), n)
		}
	})
}

// The covering indicators of a batch committed by an instance that dies
// before matching them are matched by the next instance to start: no hit
// is lost.
func TestPendingAssetSightingsSurviveACrash(t *testing.T) {
	eachDSN(t, func(t *testing.T, dsn string) {
		c := newClock()
		first := openStore(t, dsn)
		e := newEnv(t, first, c)
		acme := newTenant(t, first, "Acme")
		if _, err := e.assets.Add(tenantCtx(acme), acme, []string{"198.51.100.0/24", "acme.example"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := e.channels.Create(tenantCtx(acme), notify.ChannelInput{Kind: store.ChannelWebhook, Name: "hits",
			Target: []string{"https://hooks.example.org/x"}, Events: []string{store.EventAssetHit}}); err != nil {
			t.Fatal(err)
		}
		feed := newFeed(t, first, "botnet")
		ingestOnly(t, e, feed, append(watchedIPs(3), ioc.Indicator{Kind: ioc.Domain, Value: "mail.acme.example", Score: 60})...)
		// The instance is gone before its watch matched anything.
		first.Close()

		next := openStore(t, dsn)
		defer next.Close()
		if got := countRows(t, next, "asset_sightings_pending"); got != 4 {
			t.Fatalf("%d pending asset sightings survived, want 4", got)
		}
		e2 := newEnv(t, next, c)
		ctx, cancel := context.WithCancel(context.Background())
		defer func() { cancel(); e2.assets.Wait() }()
		if err := e2.assets.Start(ctx); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); countRows(t, next, "asset_sightings_pending") > 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the next instance never matched what the dead one left")
			}
		}
		hits := hitsOf(t, e2, tenantCtx(acme), nil)
		if len(hits) != 4 {
			t.Fatalf("hits = %+v, want 4", hits)
		}
		for _, h := range hits {
			if h.IoCType == "ip" && (h.Asset != "198.51.100.0/24" || h.Score != 70 || len(h.Tags) != 1 || h.Tags[0] != "c2" ||
				h.FeedName != "botnet" || !h.Expires().Equal(c.Now().Add(30*24*time.Hour))) {
				t.Fatalf("hit = %+v", h)
			}
		}
		if got := len(outbox(t, next)); got != 4 {
			t.Fatalf("%d notifications, want 4", got)
		}
	})
}

// statementCounter counts the statements a store runs.
type statementCounter struct{ n atomic.Int64 }

func (c *statementCounter) BeforeQuery(ctx context.Context, _ *bun.QueryEvent) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *statementCounter) AfterQuery(context.Context, *bun.QueryEvent) {}

// A batch's hits are matched in one transaction before the first is sent,
// so what each hit costs there delays every hit of the batch (issue 28:
// within 5 s of the commit): a fresh hit costs at most two statements
// (the look for a stored one, its insert), however many hits, tenants and
// channels the drain holds, and each is still notified to its tenant's
// channel and root's.
func TestDrainingHitsCostsTwoStatementsEach(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		c := newClock()
		e := newEnv(t, st, c)
		if _, _, err := e.channels.Create(rootCtx(), notify.ChannelInput{Kind: store.ChannelWebhook, Name: "all hits",
			Target: []string{"https://hooks.example.org/root"}, Events: []string{store.EventAssetHit}}); err != nil {
			t.Fatal(err)
		}
		// A tenant per watched address, each with its own channel.
		const tenants = 60
		for i := 1; i <= tenants; i++ {
			id := newTenant(t, st, fmt.Sprintf("Tenant %d", i))
			if _, err := e.assets.Add(tenantCtx(id), id, []string{fmt.Sprintf("198.51.100.%d", i)}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := e.channels.Create(tenantCtx(id), notify.ChannelInput{Kind: store.ChannelWebhook, Name: "hits",
				Target: []string{"https://hooks.example.org/x"}, Events: []string{store.EventAssetHit}}); err != nil {
				t.Fatal(err)
			}
		}
		feed := newFeed(t, st, "botnet")
		counter := &statementCounter{}
		st.DB.AddQueryHook(counter)
		drain := func(from, to int) int64 {
			var inds []ioc.Indicator
			for i := from; i <= to; i++ {
				inds = append(inds, ioc.Indicator{Kind: ioc.IP, Value: fmt.Sprintf("198.51.100.%d", i), Score: 70})
			}
			ingestOnly(t, e, feed, inds...)
			before := counter.n.Load()
			if err := e.assets.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			return counter.n.Load() - before
		}
		// The difference between a small and a large drain is what the
		// extra hits cost, without what every drain costs once.
		const small, large = 10, tenants - 10
		few, many := drain(1, small), drain(small+1, tenants)
		if per := float64(many-few) / float64(large-small); per > 2 {
			t.Errorf("draining %d hits took %d statements, %d hits %d: %.1f a hit, want at most 2", small, few, large, many, per)
		}
		if got := len(outbox(t, st)); got != 2*tenants {
			t.Errorf("%d notifications, want %d (each hit to its tenant's channel and root's)", got, 2*tenants)
		}
		if got := countRows(t, st, "asset_hits"); got != tenants {
			t.Errorf("%d hits, want %d", got, tenants)
		}
	})
}
