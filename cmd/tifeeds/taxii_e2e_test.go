package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// startServeOn starts `tifeeds serve` in-process on dsn with env set besides
// the harness's; it stops when the test ends.
func startServeOn(t *testing.T, dsn string, env map[string]string) *builtinE2E {
	t.Helper()
	addr := freeAddr(t)
	for k, v := range map[string]string{"TIFEEDS_ADDR": addr, "TIFEEDS_DB": dsn, "TIFEEDS_ADMIN_PASSWORD": "",
		"TIFEEDS_ADMIN_API_KEY": e2eKey, "TIFEEDS_LOG_FORMAT": "json"} {
		t.Setenv(k, v)
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout syncBuffer
	e := &builtinE2E{t: t, base: "http://" + addr, key: e2eKey, stderr: &syncBuffer{}}
	done := make(chan error, 1)
	go func() { done <- serve(ctx, nil, &stdout, e.stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	waitHealthy(t, e.base, done)
	return e
}

// seedUpstream stores n indicators of every kind tifeeds keeps straight into
// the upstream's database, as one feed's batch: both address families,
// URLs whose stored form keeps quotes and backslashes, every hash and
// Suricata rules with their text. It returns them as storedIoCs does.
func seedUpstream(t *testing.T, dsn string, from, n int) map[string]string {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var feedID int64
	if err := st.DB.NewRaw("SELECT id FROM feeds WHERE name = 'seed'").Scan(ctx, &feedID); err != nil {
		now := time.Now()
		f := &store.Feed{Name: "seed", Type: store.FeedCustom, Category: "TSV", Enabled: true, StatusMessage: "Success",
			PollingFrequency: 24, RetentionPeriod: 30, CreatedAt: now, UpdatedAt: now}
		if _, err := st.DB.NewInsert().Model(f).Returning("id").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		feedID = f.ID
	}
	want := map[string]string{}
	var inds []ioc.Indicator
	for i := from; i < from+n; i++ {
		for _, ind := range []ioc.Indicator{
			{Kind: ioc.IP, Value: fmt.Sprintf("11.%d.%d.%d", i>>16&255, i>>8&255, i&255)}, // outside the reserved list
			{Kind: ioc.IP, Value: fmt.Sprintf("2001:DB8::%x", i)},
			{Kind: ioc.URL, Value: fmt.Sprintf("http://evil.example/%d/it's\\here", i)},
			{Kind: ioc.URL, Value: fmt.Sprintf(`http://evil.example/q?id=%d&x='1'\"\\`, i)},
			{Kind: ioc.Domain, Value: fmt.Sprintf("d%d.evil.example", i)},
			{Kind: ioc.MD5, Value: fmt.Sprintf("%032X", i)},
			{Kind: ioc.SHA1, Value: fmt.Sprintf("%040x", i)},
			{Kind: ioc.SHA256, Value: fmt.Sprintf("%064x", i)},
			{Kind: ioc.CertSHA1, Value: fmt.Sprintf("%040x", i)},
			{Kind: ioc.Rule, Value: ioc.RuleValue(int64(2_000_000 + i)), Text: fmt.Sprintf(
				`alert http $HOME_NET any -> any any (msg:"ET TEST seed %d \"q\"\; it's"; content:"a\\b"; classtype:trojan-activity; sid:%d; rev:1;)`, i, 2_000_000+i)},
		} {
			v, err := ioc.Normalize(ind.Kind, ind.Value) // as ingestion stores it
			if err != nil {
				t.Fatal(err)
			}
			ind.Value, ind.Score, ind.Tags = v, 60, []string{"seed"}
			inds = append(inds, ind)
			want[string(ind.Kind)+" "+ind.Value] = ind.Text
		}
	}
	if _, err := st.ApplyBatch(ctx, store.Batch{FeedID: feedID, Retention: 24 * time.Hour, Now: time.Now(), Indicators: inds}); err != nil {
		t.Fatal(err)
	}
	return want
}

// storedIoCs is "type value" -> rule text ("" for other kinds) of every IoC
// of the database. It fails the test on an IoC stored twice or seen by more
// than one sighting, which the schema should make impossible.
func storedIoCs(t *testing.T, dsn string) map[string]string {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var rows []struct {
		Type      string         `bun:"type"`
		Value     string         `bun:"value"`
		Text      sql.NullString `bun:"text"`
		Sightings int            `bun:"sightings"`
	}
	if err := st.DB.NewRaw(`SELECT i.type, i.value, t.text, (SELECT count(*) FROM sightings s WHERE s.ioc_id = i.id) AS sightings
FROM iocs i LEFT JOIN ioc_texts t ON t.ioc_id = i.id`).Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		k := r.Type + " " + r.Value
		if _, dup := out[k]; dup || r.Sightings != 1 {
			t.Errorf("%s: stored twice or with %d sightings", k, r.Sightings)
		}
		out[k] = r.Text.String
	}
	return out
}

// TestTAXIIOneTifeedsFeedsAnother: tifeeds' own TAXII client, as a custom
// TAXII feed of one instance, ingests the TAXII server of another, on both
// databases, in pages smaller than the collection and in two runs, with no
// indicator lost or repeated.
func TestTAXIIOneTifeedsFeedsAnother(t *testing.T) {
	for name, dsn := range dbs {
		t.Run(name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			upDSN, downDSN := dsn(t), dsn(t)
			up := startServeOn(t, upDSN, nil)
			want := seedUpstream(t, upDSN, 0, 700) // 7,000 indicators
			checkSame(t, want, storedIoCs(t, upDSN))
			for _, k := range ioc.Kinds { // a kind added later is seeded too
				if !slices.ContainsFunc(slices.Collect(maps.Keys(want)), func(key string) bool { return strings.HasPrefix(key, string(k)+" ") }) {
					t.Fatalf("the seed has no %s", k)
				}
			}

			req, _ := http.NewRequest("GET", up.base+"/taxii2/api/collections/", nil)
			req.SetBasicAuth("admin", e2eKey)
			req.Header.Set("Accept", "application/taxii+json;version=2.1")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var cols struct{ Collections []struct{ ID, Title string } }
			_ = json.NewDecoder(res.Body).Decode(&cols)
			res.Body.Close()
			var all string
			for _, c := range cols.Collections {
				if c.Title == "tifeeds: All indicators" {
					all = c.ID
				}
			}
			if all == "" {
				t.Fatalf("no collection of all indicators: %+v", cols)
			}

			down := startServeOn(t, downDSN, map[string]string{"TIFEEDS_FEED_ALLOW_PRIVATE": "true"})
			var created struct{ CreateCustomFeed struct{ ID string } }
			if msg := down.gql(`mutation($in: CustomFeedInput!) { createCustomFeed(input: $in) { id } }`, map[string]any{"in": map[string]any{
				"category": "TAXII", "name": "upstream", "collectionUrl": up.base + "/taxii2/api/collections/" + all + "/",
				"username": "admin", "password": e2eKey, "pollingFrequency": 24, "retentionPeriod": 30, "backfillDays": 1,
			}}, &created); msg != "" {
				t.Fatal(msg)
			}
			feedID := created.CreateCustomFeed.ID
			run := waitFeedRun(t, down, feedID, "")
			if run.ErrorKind != "" || run.Stored != len(want) {
				t.Fatalf("first run: %+v, want %d stored", run, len(want))
			}
			checkSame(t, want, storedIoCs(t, downDSN))

			// New indicators upstream: the next run asks only for them.
			added := seedUpstream(t, upDSN, 700, 50)
			maps.Copy(want, added)
			if msg := down.gql(`mutation($id: ID!) { runFeedNow(id: $id) { id } }`, map[string]any{"id": feedID}, nil); msg != "" {
				t.Fatal(msg)
			}
			run2 := waitFeedRun(t, down, feedID, run.ID)
			if run2.ErrorKind != "" || run2.Stored != len(added) {
				t.Errorf("second run: %+v, want the %d new indicators alone", run2, len(added))
			}
			checkSame(t, want, storedIoCs(t, downDSN))
		})
	}
}

func checkSame(t *testing.T, want, got map[string]string) {
	t.Helper()
	for k, text := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("lost: %s", k)
		case g != text:
			t.Errorf("%s: text %q, upstream %q", k, g, text)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("not upstream: %s", k)
		}
	}
}

// waitFeedRun waits for a run of the feed other than after to end.
func waitFeedRun(t *testing.T, e *builtinE2E, feedID, after string) e2eRun {
	t.Helper()
	for i := 0; ; i++ {
		var d struct{ Feed struct{ LastRun *e2eRun } }
		if msg := e.gql(`query($id: ID!) { feed(id: $id) { lastRun { id endedAt stored errorKind errorDetail note } } }`,
			map[string]any{"id": feedID}, &d); msg != "" {
			t.Fatal(msg)
		}
		if r := d.Feed.LastRun; r != nil && r.ID != after && r.EndedAt != nil {
			return *r
		}
		if i == 600 {
			t.Fatalf("no run of feed %s ended", feedID)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
