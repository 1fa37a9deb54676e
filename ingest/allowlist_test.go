package ingest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/events/eventstest"
	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// allowlistBody is one run's TSV: benign infrastructure of the built-in
// lists, then values that user entries cover later, then one that nothing
// covers.
const allowlistBody = "ip\t8.8.8.8\tsrc\t90\n" +
	"ip\t10.1.2.3\tsrc\t90\n" +
	"domain\twww.youtube.com\tsrc\t90\n" +
	"domain\tevil.youtube.com\tsrc\t90\n" +
	"ip\t192.0.2.10\tsrc\t90\n" +
	"ip\t198.51.100.7\tsrc\t90\n" +
	"domain\tcdn.example.org\tsrc\t90\n" +
	"url\thttps://example.net/safe/page\tsrc\t90\n" +
	"url\thttps://example.net/bad\tsrc\t90\n"

func reasons(run *store.FeedRun) []string {
	var out []string
	for _, r := range run.Rejections {
		out = append(out, r.Reason)
	}
	return out
}

func (h *harness) storedValues() []string {
	h.t.Helper()
	var vals []string
	if err := h.st.DB.NewSelect().Table("iocs").Column("value").Order("value").Scan(context.Background(), &vals); err != nil {
		h.t.Fatal(err)
	}
	return vals
}

func TestAllowlistDropsRemovesAndReturns(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarness(t, st, tsv.Options{})
		srv := newTSVServer(t, allowlistBody)
		f := h.create(srv.URL+"/feed.tsv", nil)
		h.r.Wait()
		run := h.lastRun(f.ID)
		wantReasons := []string{"allowlisted: public-dns 8.8.8.8", "allowlisted: reserved 10.0.0.0/8",
			"allowlisted: cisco_top20k youtube.com"}
		if run.Rejected != 3 || run.Stored != 6 || !slices.Equal(reasons(run), wantReasons) {
			t.Fatalf("first run: stored %d, rejected %d %q; want 6 and %q", run.Stored, run.Rejected, reasons(run), wantReasons)
		}
		if run.Rejections[0].Position != 1 || run.Rejections[2].Position != 3 {
			t.Errorf("positions = %+v, want the records' ordinals 1, 2, 3", run.Rejections)
		}

		before, err := st.IoCStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a := h.m.Allowlist()
		removed := map[string]int64{}
		for _, v := range []string{"192.0.2.10", "198.51.100.0/24", "example.org", "https://example.net/safe/"} {
			e, n, err := a.Add(ctx, v, "benign "+v)
			if err != nil {
				t.Fatalf("add %q: %v", v, err)
			}
			removed[e.Value] = n
		}
		for v, n := range removed {
			if n != 1 {
				t.Errorf("adding %s removed %d IoCs, want 1", v, n)
			}
		}
		if got, want := h.storedValues(), []string{"evil.youtube.com", "https://example.net/bad"}; !slices.Equal(got, want) {
			t.Errorf("stored after adding entries = %q, want %q", got, want)
		}
		if n := h.count("SELECT COUNT(*) FROM sightings"); n != 2 {
			t.Errorf("%d sightings left, want 2", n)
		}
		checkConsistent(t, st)
		after, err := st.IoCStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after.Version == before.Version || after.Count != 2 {
			t.Errorf("ioc_stats %+v -> %+v: want a new version and a count of 2", before, after)
		}

		run = h.runNow(f.ID)
		got := strings.Join(reasons(run), "\n")
		for _, want := range []string{"allowlisted: user 192.0.2.10", "allowlisted: user 198.51.100.0/24",
			"allowlisted: user example.org", "allowlisted: user https://example.net/safe/"} {
			if !strings.Contains(got, want) {
				t.Errorf("second run reasons %q lack %q", got, want)
			}
		}
		if run.Stored != 2 || run.Rejected != 7 {
			t.Errorf("second run stored %d rejected %d, want 2 and 7", run.Stored, run.Rejected)
		}

		entries, err := a.Entries(ctx)
		if err != nil || len(entries) != 4 {
			t.Fatalf("entries = %+v, %v", entries, err)
		}
		for _, e := range entries {
			if _, err := a.Delete(ctx, e.ID); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := a.Delete(ctx, entries[0].ID); err == nil {
			t.Error("deleting a deleted entry succeeded")
		}
		run = h.runNow(f.ID)
		if run.Stored != 6 || run.Rejected != 3 {
			t.Errorf("run after deleting the entries stored %d rejected %d, want 6 and 3", run.Stored, run.Rejected)
		}
		if n := len(h.storedValues()); n != 6 {
			t.Errorf("%d IoCs stored after deleting the entries, want 6", n)
		}
	})
}

func TestAllowlistIPv6AtTheSink(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarness(t, st, tsv.Options{})
		f := h.create("http://127.0.0.1:1/feed.tsv", nil)
		h.r.Wait()
		if _, _, err := h.m.Allowlist().Add(ctx, "2001:db8::/48", ""); err != nil {
			t.Fatal(err)
		}
		sink := NewBatchSink(st, f.ID, 0, BatchOptions{BatchSize: 10, Retention: time.Hour, Allowlist: h.r.Allowlist()})
		for _, v := range []string{"2606:4700:4700::1111", "fe80::1", "2001:db8::7", "2001:db8:1::7"} {
			if err := sink.Indicator(ctx, ioc.Indicator{Kind: ioc.IP, Value: v, Source: "s", Score: 5}); err != nil {
				t.Fatal(err)
			}
		}
		if err := sink.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		s := sink.Stats()
		var got []string
		for _, r := range s.Rejections {
			got = append(got, r.Reason)
		}
		want := []string{"allowlisted: public-dns 2606:4700:4700::1111", "allowlisted: reserved fe80::/10",
			"allowlisted: user 2001:db8::/48"}
		if !slices.Equal(got, want) || s.Stored != 1 || s.Fetched != 4 {
			t.Errorf("stats = %+v, want reasons %q and 1 stored", s, want)
		}
		if vals := h.storedValues(); !slices.Equal(vals, []string{"2001:db8:1::7"}) {
			t.Errorf("stored = %q", vals)
		}
	})
}

func TestAllowlistAddValidates(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		bus := events.NewBus()
		a := feeds.NewAllowlist(st, NewAllowlist(st, bus, nil), bus, nil)
		var verr *store.ValidationError
		for _, v := range []string{"", "not a value", "10.0.0.0/4", "https://"} {
			if _, _, err := a.Add(ctx, v, ""); !errors.As(err, &verr) || verr.Field != "value" {
				t.Errorf("add %q: %v, want a validation error on value", v, err)
			}
		}
		if _, _, err := a.Add(ctx, "192.0.2.1", strings.Repeat("x", feeds.MaxAllowlistComment+1)); !errors.As(err, &verr) || verr.Field != "comment" {
			t.Errorf("long comment: %v", err)
		}
		if _, _, err := a.Add(ctx, "Example.org.", "ok"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Add(ctx, "example.org", "again"); err == nil || !strings.Contains(err.Error(), "already") {
			t.Errorf("duplicate: %v", err)
		}
		// Another instance learns of it when it reloads.
		other := NewAllowlist(st, events.NewBus(), nil)
		if _, ok := other.Match(ioc.Domain, "x.example.org"); ok {
			t.Error("another instance matched an entry before loading it")
		}
		if err := other.Load(ctx); err != nil {
			t.Fatal(err)
		}
		if m, ok := other.Match(ioc.Domain, "x.example.org"); !ok || m.List != allowlist.ListUser || m.Comment != "ok" {
			t.Errorf("match after load = %+v, %v", m, ok)
		}
	})
}

// TestAllowlistChangeReachesOtherInstances: an entry added on one instance
// is in force on another sharing the PostgreSQL database, through the
// fanout, and its deletion too.
func TestAllowlistChangeReachesOtherInstances(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	a, b := eventstest.NewInstance(t, dsn), eventstest.NewInstance(t, dsn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	la, lb := NewAllowlist(a.Store, a.Bus, nil), NewAllowlist(b.Store, b.Bus, nil)
	changes := feeds.NewAllowlist(a.Store, la, a.Bus, nil)
	// A refresh far off: only the notice can bring the change in time.
	la.Watch(ctx, time.Hour)
	lb.Watch(ctx, time.Hour)
	defer func() { cancel(); la.Wait(); lb.Wait() }()
	a.WaitListening(t, 0)
	b.WaitListening(t, 0)

	e, _, err := changes.Add(ctx, "example.org", "")
	if err != nil {
		t.Fatal(err)
	}
	covered := func() bool { _, ok := lb.Match(ioc.Domain, "www.example.org"); return ok }
	waitFor(t, "B to take A's entry", 20*time.Second, covered)
	if _, err := changes.Delete(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "B to drop A's deleted entry", 20*time.Second, func() bool { return !covered() })
}
