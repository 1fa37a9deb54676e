package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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

// seedUpstream stores n indicators of every kind the TAXII client reads
// straight into the upstream's database, as one feed's batch.
func seedUpstream(t *testing.T, dsn string, from, n int) map[string]bool {
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
	want := map[string]bool{}
	var inds []ioc.Indicator
	for i := from; i < from+n; i++ {
		for _, ind := range []ioc.Indicator{
			{Kind: ioc.IP, Value: fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)},
			{Kind: ioc.URL, Value: fmt.Sprintf("http://evil.example/%d/it's\\here", i)},
			{Kind: ioc.Domain, Value: fmt.Sprintf("d%d.evil.example", i)},
			{Kind: ioc.SHA256, Value: fmt.Sprintf("%064x", i)},
			{Kind: ioc.CertSHA1, Value: fmt.Sprintf("%040x", i)},
		} {
			v, err := ioc.Normalize(ind.Kind, ind.Value) // as ingestion stores it
			if err != nil {
				t.Fatal(err)
			}
			ind.Value, ind.Score, ind.Tags = v, 60, []string{"seed"}
			inds = append(inds, ind)
			want[string(ind.Kind)+" "+ind.Value] = true
		}
	}
	if _, err := st.ApplyBatch(ctx, store.Batch{FeedID: feedID, Retention: 24 * time.Hour, Now: time.Now(), Indicators: inds}); err != nil {
		t.Fatal(err)
	}
	return want
}

func storedIoCs(t *testing.T, dsn string) map[string]bool {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var rows []struct {
		Type  string `bun:"type"`
		Value string `bun:"value"`
	}
	if err := st.DB.NewRaw("SELECT type, value FROM iocs").Scan(context.Background(), &rows); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, r := range rows {
		out[r.Type+" "+r.Value] = true
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
			want := seedUpstream(t, upDSN, 0, 700) // 3,500 indicators

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
			for k := range seedUpstream(t, upDSN, 700, 50) {
				want[k] = true
			}
			if msg := down.gql(`mutation($id: ID!) { runFeedNow(id: $id) { id } }`, map[string]any{"id": feedID}, nil); msg != "" {
				t.Fatal(msg)
			}
			run2 := waitFeedRun(t, down, feedID, run.ID)
			if run2.ErrorKind != "" || run2.Stored != 250 {
				t.Errorf("second run: %+v, want the 250 new indicators alone", run2)
			}
			checkSame(t, want, storedIoCs(t, downDSN))
		})
	}
}

func checkSame(t *testing.T, want, got map[string]bool) {
	t.Helper()
	for k := range want {
		if !got[k] {
			t.Errorf("lost: %s", k)
		}
	}
	for k := range got {
		if !want[k] {
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
