package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/ingest/taxii"
	"github.com/tifeeds/tifeeds/ingest/taxii/taxiitest"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func ptr[T any](v T) *T { return &v }

// wantInvalid fails unless err is a validation error on field whose message
// contains msg.
func wantInvalid(t *testing.T, err error, field, msg string) {
	t.Helper()
	var ve *store.ValidationError
	if !errors.As(err, &ve) || ve.Field != field || !strings.Contains(ve.Message, msg) {
		t.Errorf("got %v, want a validation error on %q containing %q", err, field, msg)
	}
}

// premiumFeed returns the delivered feed of kind k.
func (h *harness) premiumFeed(k premium.Kind) *store.Feed {
	h.t.Helper()
	var id int64
	if err := h.st.DB.QueryRowContext(context.Background(),
		"SELECT id FROM feeds WHERE type = 'premium' AND kind = ?", string(k)).Scan(&id); err != nil {
		h.t.Fatalf("premium feed %s: %v", k, err)
	}
	return h.feed(id)
}

func TestPremiumFeedsDelivered(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		h := newHarness(t, st, tsv.Options{})
		for range 2 { // a second start (or instance) delivers nothing more
			if err := h.m.EnsurePremiumFeeds(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if n := h.count("SELECT COUNT(*) FROM feeds WHERE type = 'premium'"); n != 5 {
			t.Fatalf("%d premium feeds delivered, want 5 (every kind but the feed-list platform)", n)
		}
		for _, spec := range premium.Specs() {
			if spec.Creatable {
				if n := h.count("SELECT COUNT(*) FROM feeds WHERE kind = ?", string(spec.Kind)); n != 0 {
					t.Errorf("%d %s feeds delivered, want none", n, spec.Kind)
				}
				continue
			}
			f := h.premiumFeed(spec.Kind)
			if f.Enabled || f.StatusMessage != store.MessageDisabled || f.DerivedStatus() != store.StatusDisabled {
				t.Errorf("%s delivered enabled=%v %q, want disabled", spec.Kind, f.Enabled, f.StatusMessage)
			}
			if f.Name != spec.Title || f.Description != spec.Description || !f.Editable() || f.Deletable() || !f.Resettable() {
				t.Errorf("%s delivered as %+v", spec.Kind, f)
			}
		}
		if f := h.premiumFeed(premium.RiskList); f.RetentionPeriod != 14 {
			t.Errorf("risk-list retention = %d, want the fixed 14 days", f.RetentionPeriod)
		}
	})
}

func TestPremiumFeedSettings(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarness(t, st, tsv.Options{})
		if err := h.m.EnsurePremiumFeeds(ctx); err != nil {
			t.Fatal(err)
		}
		for name, tc := range map[string]struct {
			kind         premium.Kind
			in           feeds.FeedUpdate
			field, error string // the expected refusal; "" to accept
			check        func(f *store.Feed) error
		}{
			"risk list key and polling": {kind: premium.RiskList, in: feeds.FeedUpdate{APIKey: ptr("rk-1"), PollingFrequency: ptr(6)},
				check: func(f *store.Feed) error {
					if !f.HasSecret() || f.PollingFrequency != 6 || f.RetentionPeriod != 14 {
						return fmt.Errorf("secret %v, polling %d, retention %d", f.HasSecret(), f.PollingFrequency, f.RetentionPeriod)
					}
					return nil
				}},
			"polling above 24":               {kind: premium.RiskList, in: feeds.FeedUpdate{PollingFrequency: ptr(25)}, field: "pollingFrequency", error: "between 1 and 24 hours"},
			"polling 0":                      {kind: premium.ThreatPlatform, in: feeds.FeedUpdate{PollingFrequency: ptr(0)}, field: "pollingFrequency", error: "between 1 and 24 hours"},
			"fixed risk-list retention":      {kind: premium.RiskList, in: feeds.FeedUpdate{RetentionPeriod: ptr(30)}, field: "retentionPeriod", error: "is not a setting of Risk Lists"},
			"risk list has no backfill":      {kind: premium.RiskList, in: feeds.FeedUpdate{BackfillDays: ptr(3)}, field: "backfillDays", error: "is not a setting"},
			"retention above 360":            {kind: premium.ThreatIntelAPI, in: feeds.FeedUpdate{RetentionPeriod: ptr(361)}, field: "retentionPeriod", error: "between 1 and 360 days"},
			"retention within range":         {kind: premium.ThreatIntelAPI, in: feeds.FeedUpdate{RetentionPeriod: ptr(200), BackfillDays: ptr(30)}},
			"backfill 0 is below the range":  {kind: premium.ThreatPlatform, in: feeds.FeedUpdate{BackfillDays: ptr(0)}, field: "backfillDays", error: "between 1 and 30 days"},
			"backfill 31":                    {kind: premium.EndpointProtection, in: feeds.FeedUpdate{BackfillDays: ptr(31)}, field: "backfillDays", error: "between 1 and 30 days"},
			"api key on a client-id kind":    {kind: premium.EndpointProtection, in: feeds.FeedUpdate{APIKey: ptr("k")}, field: "apiKey", error: "is not a setting"},
			"password on an api-key kind":    {kind: premium.ThreatIntelAPI, in: feeds.FeedUpdate{Password: ptr("p")}, field: "password", error: "is not a setting"},
			"collection URL on an api kind":  {kind: premium.ThreatPlatform, in: feeds.FeedUpdate{CollectionURL: ptr("https://x.test/")}, field: "collectionUrl", error: "is not a setting"},
			"description is read-only":       {kind: premium.RiskList, in: feeds.FeedUpdate{Description: ptr("mine")}, field: "description", error: "read-only"},
			"a delivered name is read-only":  {kind: premium.ThreatPlatform, in: feeds.FeedUpdate{Name: ptr("mine")}, field: "name", error: "is not a setting"},
			"endpoint on a singleton kind":   {kind: premium.RiskList, in: feeds.FeedUpdate{APIEndpoint: ptr("https://x.test/a.json?key=k&v=2")}, field: "apiEndpoint", error: "is not a setting"},
			"category on a singleton kind":   {kind: premium.RiskList, in: feeds.FeedUpdate{Category: ptr("API")}, field: "category", error: "is not a setting"},
			"username and key of a platform": {kind: premium.ThreatPlatform, in: feeds.FeedUpdate{Username: ptr("soc"), APIKey: ptr("tp-key"), BackfillDays: ptr(14)}},
			"client id and secret": {kind: premium.EndpointProtection, in: feeds.FeedUpdate{ClientID: ptr("client-1"), ClientSecret: ptr("cs")},
				check: func(f *store.Feed) error {
					if f.Username != "client-1" || !f.HasSecret() {
						return fmt.Errorf("username %q, secret %v", f.Username, f.HasSecret())
					}
					return nil
				}},
		} {
			t.Run(name, func(t *testing.T) {
				before := h.premiumFeed(tc.kind)
				got, err := h.m.UpdateFeed(ctx, before.ID, tc.in)
				if tc.field != "" {
					wantInvalid(t, err, tc.field, tc.error)
					if after := h.feed(before.ID); after.PollingFrequency != before.PollingFrequency ||
						after.RetentionPeriod != before.RetentionPeriod || after.BackfillDays != before.BackfillDays {
						t.Errorf("a refused update changed the feed: %+v", after)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if tc.check != nil {
					if err := tc.check(h.feed(got.ID)); err != nil {
						t.Error(err)
					}
				}
			})
		}

		custom := h.create("http://127.0.0.1:1/feed.tsv", func(in *feeds.CustomFeedInput) { in.Name = "plain" })
		_, err := h.m.UpdateFeed(ctx, custom.ID, feeds.FeedUpdate{APIKey: ptr("k")})
		wantInvalid(t, err, "apiKey", "premium feeds only")
		_, err = h.m.UpdateFeed(ctx, custom.ID, feeds.FeedUpdate{Category: ptr("TAXII")})
		wantInvalid(t, err, "category", "cannot be changed")
	})
}

func TestPremiumEnableNeedsCredentials(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarness(t, st, tsv.Options{})
		if err := h.m.EnsurePremiumFeeds(ctx); err != nil {
			t.Fatal(err)
		}
		risk := h.premiumFeed(premium.RiskList)
		_, err := h.m.SetEnabled(ctx, risk.ID, true, false)
		wantInvalid(t, err, "apiKey", "must be set before the feed can be enabled")

		if _, err := h.m.UpdateFeed(ctx, risk.ID, feeds.FeedUpdate{APIKey: ptr("rk")}); err != nil {
			t.Fatal(err)
		}
		// This build has no risk-list source: say so rather than fail every run.
		_, err = h.m.SetEnabled(ctx, risk.ID, true, false)
		wantInvalid(t, err, "enabled", "cannot be fetched by this version")
		if f := h.feed(risk.ID); f.Enabled || f.StatusMessage != store.MessageDisabled {
			t.Errorf("refused enabling left the feed enabled=%v %q", f.Enabled, f.StatusMessage)
		}

		ep := h.premiumFeed(premium.EndpointProtection)
		if _, err := h.m.UpdateFeed(ctx, ep.ID, feeds.FeedUpdate{ClientSecret: ptr("s")}); err != nil {
			t.Fatal(err)
		}
		_, err = h.m.SetEnabled(ctx, ep.ID, true, false)
		wantInvalid(t, err, "clientId", "must be set")
	})
}

func TestFeedListFeeds(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		h := newHarness(t, st, tsv.Options{})
		create := func(name, endpoint string) (*store.Feed, error) {
			return h.m.CreatePremiumFeed(ctx, feeds.PremiumFeedInput{Kind: premium.FeedList, Name: name, APIEndpoint: endpoint})
		}
		for name, tc := range map[string]struct{ name, endpoint, field, error string }{
			"no key":          {"a", "https://feeds.example.test/v2/finance.json?v=2", "apiEndpoint", "?key="},
			"wrong version":   {"a", "https://feeds.example.test/v2/finance.json?key=k&v=1", "apiEndpoint", "v=2"},
			"not a json file": {"a", "https://feeds.example.test/v2/finance.csv?key=k&v=2", "apiEndpoint", ".json"},
			"not a URL":       {"a", "feeds.example.test/finance.json?key=k&v=2", "apiEndpoint", "http or https URL"},
			"empty name":      {"  ", "https://feeds.example.test/v2/finance.json?key=k&v=2", "name", "must not be empty"},
		} {
			t.Run(name, func(t *testing.T) {
				_, err := create(tc.name, tc.endpoint)
				wantInvalid(t, err, tc.field, tc.error)
			})
		}
		_, err := h.m.CreatePremiumFeed(ctx, feeds.PremiumFeedInput{Kind: premium.RiskList, Name: "x", APIEndpoint: "https://a.test/x.json?key=k&v=2"})
		wantInvalid(t, err, "kind", "has one feed")
		_, err = h.m.CreatePremiumFeed(ctx, feeds.PremiumFeedInput{Kind: premium.FeedList, Name: "x", Category: "Other",
			APIEndpoint: "https://a.test/x.json?key=k&v=2"})
		wantInvalid(t, err, "category", "must be one of")
		_, err = h.m.CreatePremiumFeed(ctx, feeds.PremiumFeedInput{Kind: premium.FeedList, Name: "x", PollingFrequency: ptr(48),
			APIEndpoint: "https://a.test/x.json?key=k&v=2"})
		wantInvalid(t, err, "pollingFrequency", "between 1 and 24")

		f, err := create("finance", "https://feeds.example.test/v2/finance-eu.json?key=SECRET123&v=2")
		if err != nil {
			t.Fatal(err)
		}
		if f.Name != "FeedList_finance" || f.Category != premium.FeedListCategory || f.Enabled || f.StatusMessage != store.MessageDisabled {
			t.Errorf("created %q category %q enabled=%v %q", f.Name, f.Category, f.Enabled, f.StatusMessage)
		}
		if strings.Contains(f.CollectionURL, "SECRET123") || !strings.HasSuffix(f.CollectionURL, "/finance-eu.json?v=2") {
			t.Errorf("shown endpoint %q, want it without the key", f.CollectionURL)
		}
		cfg, err := h.r.sourceConfig(h.feed(f.ID))
		if err != nil || cfg.URL != "https://feeds.example.test/v2/finance-eu.json?key=SECRET123&v=2" {
			t.Errorf("source URL %q (%v), want the endpoint with its key", cfg.URL, err)
		}

		if _, err := h.m.UpdateFeed(ctx, f.ID, feeds.FeedUpdate{Name: ptr("FeedList_banks"),
			APIEndpoint: ptr("https://feeds.example.test/v2/banks.json?key=K2&v=2"), RetentionPeriod: ptr(120)}); err != nil {
			t.Fatal(err)
		}
		got := h.feed(f.ID)
		cfg, _ = h.r.sourceConfig(got)
		if got.Name != "FeedList_banks" || got.RetentionPeriod != 120 || !strings.Contains(cfg.URL, "key=K2") {
			t.Errorf("after edit: %q retention %d source %q", got.Name, got.RetentionPeriod, cfg.URL)
		}
		_, err = h.m.UpdateFeed(ctx, f.ID, feeds.FeedUpdate{BackfillDays: ptr(3)})
		wantInvalid(t, err, "backfillDays", "is not a setting")

		for i := 2; i <= premium.MaxFeedListFeeds; i++ {
			if _, err := create(fmt.Sprintf("region-%d", i), fmt.Sprintf("https://feeds.example.test/v2/r%d.json?key=k&v=2", i)); err != nil {
				t.Fatalf("feed %d: %v", i, err)
			}
		}
		_, err = create("one-too-many", "https://feeds.example.test/v2/r11.json?key=k&v=2")
		wantInvalid(t, err, "", "at most 10 feeds")
		_, err = create("region-2", "https://feeds.example.test/v2/again.json?key=k&v=2")
		if n := h.count("SELECT COUNT(*) FROM feeds WHERE kind = ?", string(premium.FeedList)); n != premium.MaxFeedListFeeds || err == nil {
			t.Errorf("%d feed-list feeds stored (last create: %v), want %d", n, err, premium.MaxFeedListFeeds)
		}
	})
}

// TestDarkWebTAXIIPremiumFeed configures, enables, runs and resets the
// premium feed that is a TAXII 2.1 collection.
func TestDarkWebTAXIIPremiumFeed(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		const id = "0f7a3c70-3c1e-4a55-9d63-6a1f7b0e7a11"
		srv := taxiitest.NewServer(taxiitest.Collection{ID: id, Title: "Dark web", CanRead: true})
		defer srv.Close()
		srv.Username, srv.Password = "dw", "dw-pass"
		for i := range 40 {
			srv.Add(id, time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond), taxiitest.Indicator(i))
		}
		h := newHarness(t, st, tsv.Options{})
		h.reg.Register(taxii.Kind(taxii.Options{PageSize: 25}), taxii.DarkWebKind(taxii.Options{PageSize: 25}))
		if err := h.m.EnsurePremiumFeeds(ctx); err != nil {
			t.Fatal(err)
		}
		dw := h.premiumFeed(premium.DarkWebTAXII)
		_, err := h.m.SetEnabled(ctx, dw.ID, true, false)
		wantInvalid(t, err, "collectionUrl", "must be set")

		_, err = h.m.UpdateFeed(ctx, dw.ID, feeds.FeedUpdate{CollectionURL: ptr(srv.CollectionURL(id)), Username: ptr("dw"), Password: ptr("wrong")})
		wantInvalid(t, err, "password", "Invalid Credentials")
		if _, err := h.m.UpdateFeed(ctx, dw.ID, feeds.FeedUpdate{CollectionURL: ptr(srv.CollectionURL(id)),
			Username: ptr("dw"), Password: ptr("dw-pass"), BackfillDays: ptr(2)}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.m.SetEnabled(ctx, dw.ID, true, false); err != nil {
			t.Fatal(err)
		}
		h.r.Wait() // enabling runs the feed at once
		run := h.lastRun(dw.ID)
		got := h.feed(dw.ID)
		if run.ErrorKind != "" || run.Stored != 40 || got.StatusMessage != store.MessageSuccess || got.Cursor == "" {
			t.Fatalf("run %+v, feed %q cursor %q", run, got.StatusMessage, got.Cursor)
		}
		checkConsistent(t, st)

		reset, err := h.m.ResetPremiumFeed(ctx, dw.ID)
		if err != nil {
			t.Fatal(err)
		}
		got = h.feed(dw.ID)
		if reset.Enabled || got.Enabled || got.StatusMessage != store.MessageDisabled || got.HasSecret() ||
			got.CollectionURL != "" || got.Username != "" || got.Cursor != "" || got.LastRunAt != nil ||
			got.LastIngestion != nil || got.BackfillDays != 7 || got.Name != "Dark-web Intelligence (TAXII)" {
			t.Errorf("after reset: %+v", got)
		}
		if n := h.count("SELECT COUNT(*) FROM sightings WHERE feed_id = ?", dw.ID); n != 0 {
			t.Errorf("%d sightings left after reset", n)
		}
		if n := h.count("SELECT COUNT(*) FROM iocs"); n != 0 {
			t.Errorf("%d IoCs left without a sighting after reset", n)
		}
		if _, err := h.m.RunNow(ctx, dw.ID); err == nil {
			t.Error("a reset feed ran")
		}
		checkConsistent(t, st)

		custom := h.create("http://127.0.0.1:1/feed.tsv", nil)
		_, err = h.m.ResetPremiumFeed(ctx, custom.ID)
		wantInvalid(t, err, "id", "only premium feeds")
	})
}

// TestFeedListFeedRuns enables a feed-list feed and runs it against a
// SOCRadar-like platform: a poll stops at the per-poll limit and the next
// goes on; the walk's end expires only what the document no longer holds,
// never what the walk's first poll brought; a cursor of the earlier format
// restarts the walk.
func TestFeedListFeedRuns(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		doc := `{"is_success": true, "data": [` +
			`{"feed": "192.0.2.1", "feed_type": "ip", "maintainer_name": "SOCRadar", "extra_info": {"score": 70}},` +
			`{"feed": "Evil.Example.", "feed_type": "hostname"},` +
			`{"feed": "not an ip", "feed_type": "ip"},` +
			`{"feed": "https://evil.example/x", "feed_type": "url"},` +
			`{"feed": "9e107d9d372bb6826bd81d3542a419d6", "feed_type": "hash"}]}`
		var mu sync.Mutex
		mux := http.NewServeMux()
		mux.HandleFunc("/v2/retail.json", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("key") != "fl-key" || r.URL.Query().Get("v") != "2" {
				w.WriteHeader(http.StatusUnauthorized)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			io.WriteString(w, doc)
		})
		setDoc := func(d string) { mu.Lock(); doc = d; mu.Unlock() }
		srv := httptest.NewServer(mux)
		defer srv.Close()
		h := newHarness(t, st, tsv.Options{})
		h.reg.Register(premium.FeedListKind(premium.FeedListOptions{PerPoll: 3}))
		f, err := h.m.CreatePremiumFeed(ctx, feeds.PremiumFeedInput{Kind: premium.FeedList, Name: "retail",
			APIEndpoint: srv.URL + "/v2/retail.json?key=fl-key&v=2"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.m.SetEnabled(ctx, f.ID, true, false); err != nil {
			t.Fatal(err)
		}
		h.r.Wait()
		run := h.lastRun(f.ID)
		got := h.feed(f.ID)
		if run.ErrorKind != "" || run.Stored != 3 || run.Rejected != 1 || !strings.Contains(run.Note, "per poll") ||
			got.StatusMessage != store.MessageSuccess || !strings.Contains(got.Cursor, `"objects":4`) {
			t.Fatalf("first poll: %+v; feed %q cursor %q", run, got.StatusMessage, got.Cursor)
		}
		live := func() int {
			return h.count("SELECT COUNT(*) FROM sightings WHERE feed_id = ? AND expires_at > ?", f.ID, h.clock.Now().UnixMicro())
		}
		h.clock.Add(time.Hour)
		run = h.runNow(f.ID)
		if run.ErrorKind != "" || run.Stored != 1 || h.feed(f.ID).Cursor != "" {
			t.Fatalf("second poll: %+v, cursor %q", run, h.feed(f.ID).Cursor)
		}
		// The walk's end expires nothing its first poll brought.
		if n := live(); n != 4 {
			t.Errorf("%d live sightings after the walk, want 4 (note %q)", n, run.Note)
		}
		checkConsistent(t, st)

		// The next walk reads a document without the url: it expires.
		setDoc(`[{"feed": "192.0.2.1", "feed_type": "ip"}, {"feed": "evil.example", "feed_type": "domain"},` +
			`{"feed": "9e107d9d372bb6826bd81d3542a419d6", "feed_type": "md5"}, {"feed": "192.0.2.2", "feed_type": "ip"}]`)
		h.clock.Add(time.Hour)
		h.runNow(f.ID)
		h.clock.Add(time.Hour)
		run = h.runNow(f.ID)
		if n := live(); run.ErrorKind != "" || n != 4 || !strings.Contains(run.Note, "1 IoCs no longer listed expired") {
			t.Errorf("after the second walk: %d live sightings, run %+v", n, run)
		}
		if n := h.count("SELECT COUNT(*) FROM iocs WHERE value = ?", "https://evil.example/x"); n != 0 {
			t.Errorf("the dropped url is still stored")
		}

		// A cursor the earlier version left (an object count) restarts the
		// walk rather than failing the run.
		if _, err := st.DB.ExecContext(ctx, "UPDATE feeds SET cursor = 'object:2' WHERE id = ?", f.ID); err != nil {
			t.Fatal(err)
		}
		h.clock.Add(time.Hour)
		run = h.runNow(f.ID)
		if run.ErrorKind != "" || run.Stored != 3 || !strings.Contains(h.feed(f.ID).Cursor, `"objects":3`) {
			t.Fatalf("from an old cursor: %+v, cursor %q", run, h.feed(f.ID).Cursor)
		}
		checkConsistent(t, st)

		_, err = h.m.UpdateFeed(ctx, f.ID, feeds.FeedUpdate{APIEndpoint: ptr("")})
		wantInvalid(t, err, "apiEndpoint", "disable the feed first")

		// A key revoked upstream shows Invalid Credentials.
		if _, err := h.m.UpdateFeed(ctx, f.ID, feeds.FeedUpdate{APIEndpoint: ptr(srv.URL + "/v2/retail.json?key=old&v=2")}); err != nil {
			t.Fatal(err)
		}
		h.r.Wait() // a new endpoint runs the feed at once
		if got := h.feed(f.ID); got.StatusMessage != "Invalid Credentials" || got.DerivedStatus() != store.StatusError {
			t.Errorf("with a wrong key: %q", got.StatusMessage)
		}
	})
}

// Instance b runs a feed-list feed while instance a resets it: b's batches
// after the reset are refused (the feed is disabled) and the end of b's run
// leaves nothing on the reset feed.
func TestResetWhileRunningElsewhere(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		gate := make(chan struct{})
		obj := func(i int) string { return fmt.Sprintf(`{"feed":"192.0.2.%d","feed_type":"ip"},`, i) }
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, `[`)
			for i := 1; i <= 7; i++ {
				io.WriteString(w, obj(i))
			}
			w.(http.Flusher).Flush()
			<-gate
			for i := 8; i <= 20; i++ {
				io.WriteString(w, obj(i))
			}
			io.WriteString(w, `{"feed":"192.0.2.99","feed_type":"ip"}]`)
		}))
		defer srv.Close()
		defer func() {
			select {
			case <-gate:
			default:
				close(gate)
			}
		}()
		a := newHarness(t, st, tsv.Options{})
		b := newHarness(t, st, tsv.Options{})
		a.reg.Register(premium.FeedListKind(premium.FeedListOptions{}))
		b.reg.Register(premium.FeedListKind(premium.FeedListOptions{}))
		f, err := a.m.CreatePremiumFeed(ctx, feeds.PremiumFeedInput{Kind: premium.FeedList, Name: "x",
			APIEndpoint: srv.URL + "/v2/x.json?key=k&v=2"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.SetFeedEnabled(ctx, f.ID, true); err != nil { // as another instance would, without running it
			t.Fatal(err)
		}
		if _, err := b.m.RunNow(ctx, f.ID); err != nil {
			t.Fatal(err)
		}
		// b writes batches of 3 as the first objects arrive.
		for deadline := time.Now().Add(30 * time.Second); a.count("SELECT COUNT(*) FROM sightings WHERE feed_id = ?", f.ID) < 3; {
			if time.Now().After(deadline) {
				t.Fatal("b's run wrote nothing")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if _, err := a.m.ResetPremiumFeed(ctx, f.ID); err != nil {
			t.Fatal(err)
		}
		close(gate)
		b.r.Wait()
		got := a.feed(f.ID)
		if n := a.count("SELECT COUNT(*) FROM sightings WHERE feed_id = ?", f.ID); n != 0 {
			t.Errorf("%d sightings on the reset feed after b's run", n)
		}
		if n := a.count("SELECT COUNT(*) FROM iocs"); n != 0 {
			t.Errorf("%d IoCs after b's run on the reset feed", n)
		}
		if got.Enabled || got.StatusMessage != store.MessageDisabled || got.Cursor != "" || got.LastRunAt != nil ||
			got.LastIngestion != nil || got.HasSecret() {
			t.Errorf("reset feed after b's run: %+v", got)
		}
		if n := a.count("SELECT COUNT(*) FROM feed_runs WHERE feed_id = ?", f.ID); n != 0 {
			t.Errorf("%d runs recorded on the reset feed", n)
		}
		checkConsistent(t, st)
	})
}

// A maintainer cut to 200 bytes inside a character is stored as valid
// UTF-8 on both databases (PostgreSQL refuses invalid UTF-8).
func TestFeedListLongSource(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		maintainer := strings.Repeat("a", 199) + "é"
		doc := fmt.Sprintf(`[{"feed":"192.0.2.1","feed_type":"ip","maintainer_name":%q},{"feed":"192.0.2.2","feed_type":"ip"}]`, maintainer)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, doc) }))
		defer srv.Close()
		h := newHarness(t, st, tsv.Options{})
		h.reg.Register(premium.FeedListKind(premium.FeedListOptions{}))
		f, err := h.m.CreatePremiumFeed(ctx, feeds.PremiumFeedInput{Kind: premium.FeedList, Name: "u",
			APIEndpoint: srv.URL + "/v2/u.json?key=k&v=2"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.m.SetEnabled(ctx, f.ID, true, false); err != nil {
			t.Fatal(err)
		}
		h.r.Wait()
		if run := h.lastRun(f.ID); run.ErrorKind != "" || run.Stored != 2 {
			t.Fatalf("run = %+v", run)
		}
		var stored string
		if err := st.DB.QueryRowContext(ctx, "SELECT CAST(tags AS TEXT) FROM sightings WHERE CAST(tags AS TEXT) LIKE '%aaa%'").Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if !utf8.ValidString(stored) || !strings.Contains(stored, strings.Repeat("a", 199)+"…") || strings.Contains(stored, "é") {
			t.Errorf("stored tags %q", stored)
		}
	})
}
