package ingest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest/taxii"
	"github.com/tifeeds/tifeeds/ingest/taxii/taxiitest"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestTAXIIFeed runs a custom TAXII feed end to end: creation checks the
// collection URL against the server, runs store what the collection holds,
// the next run asks only for what was added since, and the status follows.
func TestTAXIIFeed(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		srv := taxiitest.NewServer(taxiitest.Collection{ID: "91a7b528-80eb-42ed-a74d-c6fbd5a26116", Title: "High value", Alias: "hv", CanRead: true})
		defer srv.Close()
		srv.Username, srv.Password = "analyst", "s3cret"
		const id = "91a7b528-80eb-42ed-a74d-c6fbd5a26116"
		start := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond) // servers keep microseconds at most
		for i := 0; i < 250; i++ {
			srv.Add(id, start.Add(time.Duration(i)*time.Second), taxiitest.Indicator(i))
		}
		h := newHarness(t, st, tsv.Options{})
		h.reg.Register(taxii.Kind(taxii.Options{PageSize: 100}), taxii.DarkWebKind(taxii.Options{PageSize: 100}))
		taxiiFeed := func(url, password string) (*store.Feed, error) {
			return h.m.CreateCustomFeed(ctx, feeds.CustomFeedInput{Category: store.CategoryTAXII, Name: "hv", CollectionURL: url,
				Username: "analyst", Password: password, PollingFrequency: 4, RetentionPeriod: 30, BackfillDays: 7})
		}

		for name, tc := range map[string]struct {
			url, password, field, message string
		}{
			"alias instead of id":  {srv.CollectionURL("hv"), "s3cret", "collectionUrl", "Invalid collection URL"},
			"unknown id":           {srv.CollectionURL("00000000-0000-4000-8000-000000000000"), "s3cret", "collectionUrl", "Invalid collection URL"},
			"not a collection URL": {srv.URL + "/api1/", "s3cret", "collectionUrl", "Invalid collection URL"},
			"wrong password":       {srv.CollectionURL(id), "nope", "password", "Invalid Credentials"},
		} {
			t.Run(name, func(t *testing.T) {
				_, err := taxiiFeed(tc.url, tc.password)
				var ve *store.ValidationError
				if !errors.As(err, &ve) || ve.Field != tc.field || !strings.Contains(ve.Message, tc.message) {
					t.Errorf("create: %v, want a %s error on %s", err, tc.message, tc.field)
				}
			})
		}
		if n := h.count("SELECT COUNT(*) FROM feeds"); n != 0 {
			t.Fatalf("refused creations stored %d feeds", n)
		}

		f, err := taxiiFeed(srv.CollectionURL(id), "s3cret")
		if err != nil {
			t.Fatal(err)
		}
		if f.Name != "TAXII_hv" {
			t.Errorf("name = %q", f.Name)
		}
		h.r.Wait() // creation runs the feed at once
		run := h.lastRun(f.ID)
		got := h.feed(f.ID)
		if run.ErrorKind != "" || run.Stored != 250 || got.StatusMessage != "Success" || got.Cursor == "" {
			t.Fatalf("first run: %+v, feed %q cursor %q", run, got.StatusMessage, got.Cursor)
		}
		if n := h.count("SELECT COUNT(*) FROM iocs WHERE type = 'ip'"); n != 250 {
			t.Errorf("%d IPs stored, want 250", n)
		}
		checkConsistent(t, st)

		for i := 250; i < 260; i++ {
			srv.Add(id, time.Now().UTC().Truncate(time.Millisecond), taxiitest.Indicator(i))
		}
		run = h.runNow(f.ID)
		if run.Fetched != 10 || run.Stored != 10 {
			t.Errorf("incremental run fetched %d, stored %d; want 10 new", run.Fetched, run.Stored)
		}
		reqs := srv.Requests()
		if last := reqs[len(reqs)-1]; last.AddedAfter != got.Cursor {
			t.Errorf("incremental run asked added_after=%q, want the cursor %q", last.AddedAfter, got.Cursor)
		}

		srv.Password = "rotated"
		h.runNow(f.ID)
		if got := h.feed(f.ID); got.StatusMessage != "Invalid Credentials" || got.DerivedStatus() != store.StatusError {
			t.Errorf("after the password changed upstream: %q %s", got.StatusMessage, got.DerivedStatus())
		}
	})
}

// taxiiHarness starts a runner with TAXII sources tuned by o, a
// medallion-like server holding n indicators added a second apart in the
// last hours, and a feed on it, which runs once at creation.
func taxiiHarness(t *testing.T, st *store.Store, o taxii.Options, n int) (*harness, *taxiitest.Server, *store.Feed, []string) {
	t.Helper()
	const id = "91a7b528-80eb-42ed-a74d-c6fbd5a26116"
	srv := taxiitest.NewServer(taxiitest.Collection{ID: id, Title: "Reference", CanRead: true})
	t.Cleanup(srv.Close)
	srv.Sessions, srv.MaxPageSize = true, 100
	start := time.Now().UTC().Add(-time.Duration(n+60) * time.Second).Truncate(time.Millisecond)
	dates := make([]string, n)
	for i := range n {
		added := start.Add(time.Duration(i) * time.Second)
		dates[i] = added.Format(taxiitest.TimeLayout)
		srv.Add(id, added, taxiitest.Indicator(i))
	}
	h := newHarness(t, st, tsv.Options{})
	h.reg.Register(taxii.Kind(o), taxii.DarkWebKind(o))
	f, err := h.m.CreateCustomFeed(context.Background(), feeds.CustomFeedInput{Category: store.CategoryTAXII, Name: "ref",
		CollectionURL: srv.CollectionURL(id), PollingFrequency: 4, RetentionPeriod: 30, BackfillDays: 7})
	if err != nil {
		t.Fatal(err)
	}
	h.r.Wait()
	return h, srv, f, dates
}

// TestTAXIIFeedReferenceServer: a server that names one session in every
// page's next (the OASIS reference server) gives all of a 1,500-indicator
// collection, in pages of 100, in one run.
func TestTAXIIFeedReferenceServer(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		const n = 1500
		h, srv, f, dates := taxiiHarness(t, st, taxii.Options{PageSize: 100}, n)
		run := h.lastRun(f.ID)
		if run.ErrorKind != "" || run.Stored != n || run.Note != "" {
			t.Fatalf("run: %+v, want %d stored and no error", run, n)
		}
		if got := h.count("SELECT COUNT(*) FROM iocs WHERE type = 'ip'"); got != n {
			t.Errorf("%d IPs stored, want %d", got, n)
		}
		if got := h.feed(f.ID); got.Cursor != dates[n-1] || got.StatusMessage != "Success" {
			t.Errorf("feed: cursor %q (want %q), status %q", got.Cursor, dates[n-1], got.StatusMessage)
		}
		reqs := srv.Requests()
		var walk []taxiitest.Request // the run's, after the creation check's
		for _, r := range reqs {
			if r.Limit == "100" {
				walk = append(walk, r)
			}
		}
		if len(walk) != n/100 || walk[1].Next == "" || walk[1].Next != walk[len(walk)-1].Next {
			t.Errorf("requests: %+v, want %d with one next repeated", walk, n/100)
		}
		checkConsistent(t, st)
	})
}

// TestTAXIIFeedRunCaps: a run stops at its page cap as a success with a
// note, checkpointed, and the next run goes on from the cursor.
func TestTAXIIFeedRunCaps(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		const n = 250
		h, srv, f, dates := taxiiHarness(t, st, taxii.Options{PageSize: 50, MaxPages: 2}, n)
		run := h.lastRun(f.ID)
		got := h.feed(f.ID)
		if run.ErrorKind != "" || run.Stored != 100 || !strings.Contains(run.Note, "per-run cap of 2 pages") ||
			got.StatusMessage != "Success" || got.Cursor != dates[99] {
			t.Fatalf("first run: %+v; feed %q, cursor %q (want %q)", run, got.StatusMessage, got.Cursor, dates[99])
		}
		run = h.runNow(f.ID)
		if run.ErrorKind != "" || run.Stored != 100 || run.Note == "" {
			t.Fatalf("second run: %+v, want the next 100", run)
		}
		reqs := srv.Requests()
		if first := reqs[len(reqs)-2]; first.AddedAfter != dates[99] || first.Next != "" {
			t.Errorf("second run began with %+v, want added_after %q", first, dates[99])
		}
		run = h.runNow(f.ID)
		if run.ErrorKind != "" || run.Stored != 50 || run.Note != "" {
			t.Fatalf("third run: %+v, want the last 50 and no note", run)
		}
		if c := h.count("SELECT COUNT(*) FROM iocs WHERE type = 'ip'"); c != n {
			t.Errorf("%d IPs stored, want %d", c, n)
		}
		if got := h.feed(f.ID); got.Cursor != dates[n-1] {
			t.Errorf("cursor %q, want %q", got.Cursor, dates[n-1])
		}
	})
}

// TestTAXIIFeedHugeValue: a page holding a JSON value over the bound fails
// the run with a Fetching Data Error that says so.
func TestTAXIIFeedHugeValue(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		h, srv, f, _ := taxiiHarness(t, st, taxii.Options{PageSize: 100, MaxValueBytes: 64 << 10}, 0)
		srv.Hook = func(w http.ResponseWriter, r *http.Request) bool {
			if !strings.HasSuffix(r.URL.Path, "/objects/") {
				return false
			}
			w.Header().Set("Content-Type", taxiitest.MediaType)
			fmt.Fprintf(w, `{"objects":[{"type":"indicator","description":"%s"}]}`, strings.Repeat("A", 1<<20))
			return true
		}
		run := h.runNow(f.ID)
		if run.ErrorKind != "Fetching Data Error" || !strings.Contains(run.ErrorDetail, "larger than 65536 bytes") {
			t.Fatalf("run: %+v, want a Fetching Data Error naming the bound", run)
		}
	})
}
