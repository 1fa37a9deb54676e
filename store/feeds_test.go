package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func tsvFeed(name string) store.NewCustomFeed {
	return store.NewCustomFeed{Category: store.CategoryTSV, Name: name, CollectionURL: "http://127.0.0.1/x.tsv",
		PollingFrequency: 4, RetentionPeriod: 30}
}

func TestCreateCustomFeed(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		f, err := st.CreateCustomFeed(ctx, tsvFeed(" acme "))
		if err != nil {
			t.Fatal(err)
		}
		if f.Name != "TSV_acme" || f.Type != store.FeedCustom || !f.Enabled || f.ID == 0 ||
			f.StatusMessage != store.MessageInitializing || f.DerivedStatus() != store.StatusSuccess {
			t.Errorf("created = %+v", f)
		}
		if _, err := st.CreateCustomFeed(ctx, tsvFeed("TSV_acme")); !errors.Is(err, store.ErrConflict) {
			t.Errorf("same name again: err = %v, want ErrConflict", err)
		}
		tx := store.NewCustomFeed{Category: store.CategoryTAXII, Name: "acme", CollectionURL: "https://x/api/collections/1/",
			PollingFrequency: 1, RetentionPeriod: 360, BackfillDays: 30}
		if g, err := st.CreateCustomFeed(ctx, tx); err != nil || g.Name != "TAXII_acme" || g.BackfillDays != 30 {
			t.Errorf("taxii feed = %+v, %v", g, err)
		}

		bad := map[string]struct {
			edit  func(*store.NewCustomFeed)
			field string
		}{
			"no name":                 {func(n *store.NewCustomFeed) { n.Name = "  " }, "name"},
			"only the prefix":         {func(n *store.NewCustomFeed) { n.Name = "TSV_" }, "name"},
			"long name":               {func(n *store.NewCustomFeed) { n.Name = strings.Repeat("n", 101) }, "name"},
			"bad category":            {func(n *store.NewCustomFeed) { n.Category = "CSV" }, "category"},
			"no url":                  {func(n *store.NewCustomFeed) { n.CollectionURL = "" }, "collectionUrl"},
			"polling 0":               {func(n *store.NewCustomFeed) { n.PollingFrequency = 0 }, "pollingFrequency"},
			"polling over a week":     {func(n *store.NewCustomFeed) { n.PollingFrequency = 169 }, "pollingFrequency"},
			"retention 0":             {func(n *store.NewCustomFeed) { n.RetentionPeriod = 0 }, "retentionPeriod"},
			"retention 361":           {func(n *store.NewCustomFeed) { n.RetentionPeriod = 361 }, "retentionPeriod"},
			"backfill on TSV":         {func(n *store.NewCustomFeed) { n.BackfillDays = 1 }, "backfillDays"},
			"backfill 31 on TAXII":    {func(n *store.NewCustomFeed) { n.Category = store.CategoryTAXII; n.BackfillDays = 31 }, "backfillDays"},
			"negative backfill TAXII": {func(n *store.NewCustomFeed) { n.Category = store.CategoryTAXII; n.BackfillDays = -1 }, "backfillDays"},
		}
		for name, tc := range bad {
			t.Run(name, func(t *testing.T) {
				in := tsvFeed("bad " + name)
				tc.edit(&in)
				_, err := st.CreateCustomFeed(ctx, in)
				var ve *store.ValidationError
				if !errors.As(err, &ve) || ve.Field != tc.field {
					t.Errorf("err = %v, want a validation error on %s", err, tc.field)
				}
			})
		}
	})
}

func TestCustomFeedLimit(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		for i := range store.MaxCustomFeeds {
			if _, err := st.CreateCustomFeed(ctx, tsvFeed(fmt.Sprintf("f%d", i))); err != nil {
				t.Fatalf("feed %d: %v", i+1, err)
			}
		}
		_, err := st.CreateCustomFeed(ctx, tsvFeed("one too many"))
		var ve *store.ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), "at most 30 custom feeds") {
			t.Fatalf("31st feed: err = %v", err)
		}
		// Built-in feeds do not count.
		if err := st.CreateFeed(ctx, &store.Feed{Name: "builtin", Type: store.FeedBuiltin, Kind: "otx", Category: "builtin",
			Enabled: true, RetentionPeriod: 30}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestUpdateFeedRules(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		custom, _ := st.CreateCustomFeed(ctx, tsvFeed("acme"))
		builtin := &store.Feed{Name: "Builtin", Type: store.FeedBuiltin, Kind: "otx", Category: "builtin", Enabled: true, RetentionPeriod: 30}
		premium := &store.Feed{Name: "Premium", Type: store.FeedPremium, Kind: "dark", Category: "premium", PollingFrequency: 24, RetentionPeriod: 30,
			StatusMessage: store.MessageDisabled}
		for _, f := range []*store.Feed{builtin, premium} {
			if err := st.CreateFeed(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		if builtin.PollingFrequency != 24 {
			t.Errorf("built-in polling = %d, want fixed 24", builtin.PollingFrequency)
		}
		if !custom.Editable() || !custom.Deletable() || custom.Resettable() ||
			builtin.Editable() || builtin.Deletable() || builtin.Resettable() ||
			!premium.Editable() || premium.Deletable() || !premium.Resettable() {
			t.Error("action rules do not follow the spec")
		}

		ptr := func(v int) *int { return &v }
		str := func(v string) *string { return &v }
		before, after, err := st.UpdateFeed(ctx, custom.ID, store.FeedPatch{Name: str("renamed"), PollingFrequency: ptr(8), Description: str(" d ")})
		if err != nil {
			t.Fatal(err)
		}
		if before.PollingFrequency != 4 || after.PollingFrequency != 8 || after.Name != "TSV_renamed" ||
			after.Description != "d" || after.RetentionPeriod != 30 || after.Category != store.CategoryTSV {
			t.Errorf("after = %+v", after)
		}
		got, _ := st.Feed(ctx, custom.ID)
		if got.Name != "TSV_renamed" || got.PollingFrequency != 8 {
			t.Errorf("stored = %+v", got)
		}

		cases := map[string]struct {
			id    int64
			patch store.FeedPatch
			field string
		}{
			"built-in":               {builtin.ID, store.FeedPatch{RetentionPeriod: ptr(10)}, "id"},
			"premium name":           {premium.ID, store.FeedPatch{Name: str("x")}, "name"},
			"premium description":    {premium.ID, store.FeedPatch{Description: str("x")}, "description"},
			"premium polling 25":     {premium.ID, store.FeedPatch{PollingFrequency: ptr(25)}, "pollingFrequency"},
			"custom TSV backfill":    {custom.ID, store.FeedPatch{BackfillDays: ptr(3)}, "backfillDays"},
			"custom retention 0":     {custom.ID, store.FeedPatch{RetentionPeriod: ptr(0)}, "retentionPeriod"},
			"custom empty url":       {custom.ID, store.FeedPatch{CollectionURL: str(" ")}, "collectionUrl"},
			"custom polling too big": {custom.ID, store.FeedPatch{PollingFrequency: ptr(1000)}, "pollingFrequency"},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				_, _, err := st.UpdateFeed(ctx, tc.id, tc.patch)
				var ve *store.ValidationError
				if !errors.As(err, &ve) || ve.Field != tc.field {
					t.Errorf("err = %v, want a validation error on %s", err, tc.field)
				}
			})
		}
		if _, _, err := st.UpdateFeed(ctx, 9999, store.FeedPatch{}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("unknown feed: err = %v", err)
		}
		if err := st.DeleteFeed(ctx, builtin.ID); err == nil {
			t.Error("deleted a built-in feed")
		}
		if err := st.DeleteFeed(ctx, premium.ID); err == nil {
			t.Error("deleted a premium feed")
		}
		// Untouched by the refused updates.
		got, _ = st.Feed(ctx, premium.ID)
		if got.Name != "Premium" || got.PollingFrequency != 24 {
			t.Errorf("premium changed: %+v", got)
		}
	})
}

func TestFeedStatusAndRuns(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		f, _ := st.CreateCustomFeed(ctx, tsvFeed("runs"))
		run, err := st.StartRun(ctx, f.ID, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		got, _ := st.Feed(ctx, f.ID)
		if got.StatusMessage != store.MessageInitializing {
			t.Errorf("first run message = %q", got.StatusMessage)
		}
		run.Fetched, run.Stored, run.Added, run.Rejected = 10, 8, 8, 2
		run.Rejections = []store.Rejection{{Position: 3, Reason: "bad score"}, {Position: 7, Reason: "bad type"}}
		got, err = st.FinishRun(ctx, run, f.SuccessMessage())
		if err != nil {
			t.Fatal(err)
		}
		if got.StatusMessage != store.MessageSuccess || got.LastIngestion == nil || got.LastRunAt == nil ||
			got.DerivedStatus() != store.StatusSuccess {
			t.Errorf("after a good run: %+v", got)
		}

		// Second run fails: no Initializing, Error with the failure kind.
		run2, _ := st.StartRun(ctx, f.ID, time.Now().Add(time.Second))
		if got, _ := st.Feed(ctx, f.ID); got.StatusMessage != store.MessageSuccess {
			t.Errorf("second run shows %q, want Initializing only on the first", got.StatusMessage)
		}
		run2.ErrorKind, run2.ErrorDetail = string(ioc.InvalidCredentials), "401"
		got, _ = st.FinishRun(ctx, run2, run2.ErrorKind)
		if got.DerivedStatus() != store.StatusError || got.StatusMessage != "Invalid Credentials" {
			t.Errorf("after a failed run: %s %q", got.DerivedStatus(), got.StatusMessage)
		}

		runs, err := st.FeedRuns(ctx, f.ID, 10)
		if err != nil || len(runs) != 2 || runs[0].ID != run2.ID || runs[1].Rejections[1].Position != 7 {
			t.Fatalf("runs = %+v, %v", runs, err)
		}
		last, err := st.LastRun(ctx, f.ID)
		if err != nil || last.ID != run2.ID || last.ErrorKind != "Invalid Credentials" {
			t.Errorf("last run = %+v, %v", last, err)
		}
		n, err := st.AddedSince(ctx, f.ID, time.Now().Add(-time.Hour))
		if err != nil || n != 8 {
			t.Errorf("stored since = %d, %v", n, err)
		}

		// Disable: Disabled; a run finishing meanwhile keeps Disabled.
		got, err = st.SetFeedEnabled(ctx, f.ID, false)
		if err != nil || got.Enabled || got.StatusMessage != store.MessageDisabled || got.DisabledAt == nil ||
			got.DerivedStatus() != store.StatusDisabled {
			t.Fatalf("disabled = %+v, %v", got, err)
		}
		run3, _ := st.StartRun(ctx, f.ID, time.Now().Add(2*time.Second))
		run3.ErrorKind = store.MessageStopped
		if got, _ := st.FinishRun(ctx, run3, store.MessageStopped); got.StatusMessage != store.MessageDisabled {
			t.Errorf("disabled feed after a stopped run shows %q", got.StatusMessage)
		}
		// Enable: the message of the last finished run comes back.
		got, _ = st.SetFeedEnabled(ctx, f.ID, true)
		if !got.Enabled || got.StatusMessage != store.MessageStopped || got.DerivedStatus() != store.StatusError {
			t.Errorf("re-enabled = %+v", got)
		}
		if _, err := st.LastRun(ctx, 9999); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("last run of unknown feed: %v", err)
		}
	})
}

func TestListFeeds(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		mk := func(name string, poll int, desc string) *store.Feed {
			in := tsvFeed(name)
			in.PollingFrequency, in.Description = poll, desc
			f, err := st.CreateCustomFeed(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
		a := mk("alpha", 1, "Phishing 100%")
		b := mk("beta", 2, "malware_urls 1000")
		c := mk("gamma", 2, "one user")
		st.SetFeedEnabled(ctx, c.ID, false)
		run, _ := st.StartRun(ctx, b.ID, time.Now())
		run.Stored = 1
		st.FinishRun(ctx, run, string(ioc.InvalidURL))
		if err := st.CreateFeed(ctx, &store.Feed{Name: "OTX", Type: store.FeedBuiltin, Kind: "otx", Category: "builtin",
			Enabled: true, RetentionPeriod: 30, StatusMessage: store.MessageRunning}); err != nil {
			t.Fatal(err)
		}
		names := func(fs []store.Feed) string {
			var out []string
			for _, f := range fs {
				out = append(out, f.Name)
			}
			return strings.Join(out, ",")
		}
		yes := true
		now := time.Now()
		hourAgo := now.Add(-time.Hour)
		cases := map[string]struct {
			q     store.FeedQuery
			want  string
			total int
		}{
			"all by name":          {store.FeedQuery{}, "OTX,TSV_alpha,TSV_beta,TSV_gamma", 4},
			"desc":                 {store.FeedQuery{Desc: true}, "TSV_gamma,TSV_beta,TSV_alpha,OTX", 4},
			"search is free text":  {store.FeedQuery{Search: "PHISH"}, "TSV_alpha", 1},
			"search escapes %":     {store.FeedQuery{Search: "100%"}, "TSV_alpha", 1},
			"search escapes _":     {store.FeedQuery{Search: "e_u"}, "TSV_beta", 1},
			"search the message":   {store.FeedQuery{Search: "invalid url"}, "TSV_beta", 1},
			"filter polling":       {store.FeedQuery{Filter: store.FeedFilter{PollingFrequencies: []int{2}}}, "TSV_beta,TSV_gamma", 2},
			"filter type":          {store.FeedQuery{Filter: store.FeedFilter{Types: []store.FeedType{store.FeedBuiltin}}}, "OTX", 1},
			"filter enabled":       {store.FeedQuery{Filter: store.FeedFilter{Enabled: []bool{false}}}, "TSV_gamma", 1},
			"filter both enabled":  {store.FeedQuery{Filter: store.FeedFilter{Enabled: []bool{true, false}}}, "OTX,TSV_alpha,TSV_beta,TSV_gamma", 4},
			"filter message":       {store.FeedQuery{Filter: store.FeedFilter{StatusMessages: []string{"Disabled", "Running"}}}, "OTX,TSV_gamma", 2},
			"filter name and desc": {store.FeedQuery{Filter: store.FeedFilter{Names: []string{"TSV_alpha", "TSV_beta"}, Descriptions: []string{"one user", "malware_urls 1000"}}}, "TSV_beta", 1},
			"last ingestion range": {store.FeedQuery{Filter: store.FeedFilter{LastIngestionFrom: &hourAgo}}, "TSV_beta", 1},
			"order by status":      {store.FeedQuery{Order: store.OrderFeedStatus}, "TSV_gamma,TSV_beta,TSV_alpha,OTX", 4},
			"order by polling":     {store.FeedQuery{Order: store.OrderFeedPollingFrequency, Desc: true}, "OTX,TSV_beta,TSV_gamma,TSV_alpha", 4},
			"order by ingestion":   {store.FeedQuery{Order: store.OrderFeedLastIngestion, Desc: true}, "TSV_beta,TSV_alpha,TSV_gamma,OTX", 4},
			"page":                 {store.FeedQuery{Offset: 1, Limit: 2}, "TSV_alpha,TSV_beta", 4},
			"message order":        {store.FeedQuery{Order: store.OrderFeedStatusMessage, Filter: store.FeedFilter{Enabled: []bool{yes}}}, "TSV_alpha,TSV_beta,OTX", 3},
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				got, total, err := st.Feeds(ctx, tc.q)
				if err != nil {
					t.Fatal(err)
				}
				if names(got) != tc.want || total != tc.total {
					t.Errorf("got %s (%d), want %s (%d)", names(got), total, tc.want, tc.total)
				}
			})
		}
		if _, _, err := st.Feeds(ctx, store.FeedQuery{Order: "secret"}); err == nil {
			t.Error("sorted on an unknown column")
		}
		_ = a
	})
}

func TestTryLockFeed(t *testing.T) {
	st := storetest.NewPostgres(t)
	ctx := context.Background()
	unlock, ok, err := st.TryLockFeed(ctx, 7)
	if err != nil || !ok {
		t.Fatalf("first lock: %v %v", ok, err)
	}
	if _, ok, err := st.TryLockFeed(ctx, 7); err != nil || ok {
		t.Fatalf("second lock of the same feed: ok=%v err=%v", ok, err)
	}
	if u, ok, _ := st.TryLockFeed(ctx, 8); !ok {
		t.Error("another feed is locked too")
	} else {
		u()
	}
	unlock()
	if u, ok, _ := st.TryLockFeed(ctx, 7); !ok {
		t.Error("lock not released")
	} else {
		u()
	}
}

func TestSecrets(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(store.SecretKeyEnv, "")
	s1, err := store.LoadSecrets("sqlite:" + filepath.Join(dir, "db", "tifeeds.db"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(dir, "db", "secret.key"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", info, err)
	}
	sealed, err := s1.Seal("hunter2")
	if err != nil || len(sealed) == 0 || strings.Contains(string(sealed), "hunter2") {
		t.Fatalf("sealed = %q, %v", sealed, err)
	}
	s2, err := store.LoadSecrets("sqlite:" + filepath.Join(dir, "db", "tifeeds.db"))
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := s2.Open(sealed); err != nil || plain != "hunter2" {
		t.Errorf("reopened with the same key file: %q %v", plain, err)
	}
	if none, _ := s1.Seal(""); none != nil {
		t.Error("empty secret sealed to something")
	}
	t.Setenv(store.SecretKeyEnv, strings.Repeat("ab", 32))
	s3, err := store.LoadSecrets("sqlite:" + filepath.Join(dir, "db", "tifeeds.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3.Open(sealed); !errors.Is(err, store.ErrSecretKey) {
		t.Errorf("opened with another key: %v", err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := s1.Open(sealed); !errors.Is(err, store.ErrSecretKey) {
		t.Errorf("opened a tampered value: %v", err)
	}
	t.Setenv(store.SecretKeyEnv, "short")
	if _, err := store.LoadSecrets("sqlite:x.db"); err == nil {
		t.Error("accepted a short key")
	}
}

func TestPruneFeedRuns(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		old, _ := st.CreateCustomFeed(ctx, tsvFeed("old"))
		other, _ := st.CreateCustomFeed(ctx, tsvFeed("other"))
		base := time.Now().UTC().Add(-200 * 24 * time.Hour).Truncate(time.Second)
		// record adds a finished run of f that started at base + i hours.
		record := func(f *store.Feed, i int, finished bool) {
			run, err := st.StartRun(ctx, f.ID, base.Add(time.Duration(i)*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if finished {
				end := run.StartedAt.Add(time.Minute)
				run.EndedAt = &end
				if _, err := st.FinishRun(ctx, run, f.SuccessMessage()); err != nil {
					t.Fatal(err)
				}
			}
		}
		for i := range 8 {
			record(old, i, true)
		}
		record(old, 9, false) // unfinished: a run going on or a crash's, never pruned
		for i := range 3 {
			record(other, i, true)
		}
		n, err := st.PruneFeedRuns(ctx, time.Now().Add(-90*24*time.Hour), 5)
		if err != nil {
			t.Fatal(err)
		}
		if n != 4 {
			t.Errorf("pruned %d runs, want 4 (the old feed's oldest 4 of 9: its newest 5 are kept, the unfinished one among them)", n)
		}
		runs, _ := st.FeedRuns(ctx, old.ID, 100)
		if len(runs) != 5 || runs[0].EndedAt != nil || !runs[4].StartedAt.Equal(base.Add(4*time.Hour)) {
			t.Errorf("old feed keeps %d runs: newest %v, oldest %v", len(runs), runs[0].StartedAt, runs[len(runs)-1].StartedAt)
		}
		if runs, _ := st.FeedRuns(ctx, other.ID, 100); len(runs) != 3 {
			t.Errorf("other feed keeps %d runs, want its 3", len(runs))
		}
		if n, _ := st.PruneFeedRuns(ctx, base, 0); n != 0 {
			t.Errorf("runs that ended after the cutoff were pruned: %d", n)
		}
	})
}
