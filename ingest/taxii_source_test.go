package ingest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/taxii/taxiitest"
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
		h := newHarness(t, st, TSVOptions{})
		h.reg.RegisterTAXII(TAXIIOptions{PageSize: 100})
		taxiiFeed := func(url, password string) (*store.Feed, error) {
			return h.r.CreateCustomFeed(ctx, CustomFeedInput{Category: store.CategoryTAXII, Name: "hv", CollectionURL: url,
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
