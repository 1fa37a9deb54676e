package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/ingest"
	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/server"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// withRunner replaces the fixture's server by one wired to a running feed
// runner, as `tifeeds serve` is.
func (f *fixture) withRunner() *ingest.Runner {
	f.t.Helper()
	secrets, err := store.NewSecrets([]byte(strings.Repeat("k", 32)))
	if err != nil {
		f.t.Fatal(err)
	}
	sources := ingest.NewRegistryWithClient(egress.NewClient(egress.Options{AllowPrivate: true}))
	sources.Register(tsv.Kind(tsv.Options{TempDir: f.t.TempDir(), ChunkLines: 500}))
	runner, err := ingest.New(ingest.Options{Store: f.store, Secrets: secrets, Sources: sources, Log: discardLogger(), BatchSize: 500})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := runner.Start(context.Background()); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { runner.Stop(context.Background()) })
	service, err := feeds.New(feeds.Options{Store: f.store, Secrets: secrets, Bus: runner.Bus(), Sources: sources, Runner: runner, Allowlist: runner.Allowlist()})
	if err != nil {
		f.t.Fatal(err)
	}
	s := server.New(server.DefaultConfig(), f.store,
		&graph.Resolver{Store: f.store, Events: runner.Bus(), Ingest: runner, Feeds: service}, discardLogger())
	f.srv.Close()
	f.srv = httptest.NewServer(s.Handler())
	f.t.Cleanup(f.srv.Close)
	return runner
}

func TestSubscriptionsFollowARun(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		runner := f.withRunner()
		var rows strings.Builder
		for i := 0; i < 3000; i++ {
			fmt.Fprintf(&rows, "ip\t198.18.%d.%d\tbotnet_x\t90\n", i/256, i%256)
		}
		feedSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(rows.String()))
		}))
		defer feedSrv.Close()

		status := f.dialWS(nil)
		status.init(map[string]any{"username": "admin", "apiKey": adminKey})
		status.subscribe("s", `subscription { feedStatusChanged { id name status statusMessage lastIngestion } }`)
		progress := f.dialWS(nil)
		progress.init(map[string]any{"authorization": basicHeader("admin", adminKey)})
		progress.subscribe("p", `subscription { feedRunProgress { feedId runId fetched stored rejected done } }`)
		time.Sleep(100 * time.Millisecond) // let both subscriptions register on the bus

		r := f.graphql("admin", adminKey, `mutation { createCustomFeed(input: {category: TSV, name: "live", collectionUrl: "`+
			feedSrv.URL+`/f.tsv", pollingFrequency: 4, retentionPeriod: 30}) { id statusMessage } }`)
		if !strings.Contains(string(r.body), `"statusMessage":"Initializing"`) {
			t.Fatalf("create: %s", r.body)
		}
		runner.Wait()

		// Status: the feed ends on Success with a last ingestion, without
		// anyone asking again.
		var last struct{ Status, StatusMessage, LastIngestion string }
		for last.StatusMessage != "Success" {
			m, err := status.read(10 * time.Second)
			if err != nil {
				t.Fatalf("status stream ended before Success (last %+v): %v", last, err)
			}
			if m.Type != "next" || m.ID != "s" {
				t.Fatalf("status message %+v", m)
			}
			var p struct {
				Data struct {
					FeedStatusChanged struct{ Status, StatusMessage, LastIngestion string }
				}
			}
			json.Unmarshal(m.Payload, &p)
			last = p.Data.FeedStatusChanged
		}
		if last.Status != "SUCCESS" || last.LastIngestion == "" {
			t.Errorf("final status event = %+v", last)
		}

		// Progress: counters grow and the last event says done with all rows.
		var prev, final struct {
			Fetched, Stored, Rejected int
			Done                      bool
		}
		for !final.Done {
			m, err := progress.read(10 * time.Second)
			if err != nil {
				t.Fatalf("progress stream ended before done (last %+v): %v", final, err)
			}
			var p struct {
				Data struct {
					FeedRunProgress struct {
						Fetched, Stored, Rejected int
						Done                      bool
					}
				}
			}
			json.Unmarshal(m.Payload, &p)
			prev, final = final, p.Data.FeedRunProgress
			if final.Fetched < prev.Fetched {
				t.Errorf("fetched went back from %d to %d", prev.Fetched, final.Fetched)
			}
		}
		if final.Fetched != 3000 || final.Stored != 3000 || final.Rejected != 0 {
			t.Errorf("final progress = %+v, want 3000 fetched and stored", final)
		}

		// A slow consumer never holds up ingestion: a subscriber that reads
		// nothing does not stop the next run from finishing.
		idle := f.dialWS(nil)
		idle.init(map[string]any{"username": "admin", "apiKey": adminKey})
		idle.subscribe("i", `subscription { feedRunProgress { fetched } }`)
		r = f.graphql("admin", adminKey, `{ feeds { nodes { id } } }`)
		id := between(string(r.body), `"id":"`, `"`)
		done := make(chan struct{})
		go func() {
			f.graphql("admin", adminKey, `mutation { runFeedNow(id: "`+id+`") { id } }`)
			runner.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("a run did not finish while a subscriber was not reading")
		}
	})
}

// TestProgressEndsWithItsFeed: a run whose final event never arrives (lost
// between instances) stops repeating once its feed's deletion is heard.
func TestProgressEndsWithItsFeed(t *testing.T) {
	f := newFixture(t, storetest.NewSQLite(t))
	bus := events.NewBus()
	s := server.New(server.DefaultConfig(), f.store, &graph.Resolver{Store: f.store, Events: bus}, discardLogger())
	f.srv.Close()
	f.srv = httptest.NewServer(s.Handler())
	t.Cleanup(f.srv.Close)

	c := f.dialWS(nil)
	c.init(map[string]any{"username": "admin", "apiKey": adminKey})
	c.subscribe("p", `subscription { feedRunProgress { feedId runId fetched done } }`)
	time.Sleep(100 * time.Millisecond) // let the subscription register on the bus
	bus.Publish(events.Event{FeedID: 7, Progress: &events.Progress{FeedID: 7, RunID: 70, Fetched: 5}})
	for i := 0; i < 2; i++ { // the event, then at least one repeat
		if m, err := c.read(5 * time.Second); err != nil || !strings.Contains(string(m.Payload), `"runId":"70"`) {
			t.Fatalf("progress %d: %+v %v", i, m, err)
		}
	}
	bus.Publish(events.Event{FeedID: 7, Deleted: true})
	// A repeat already on its way may still come; none after it.
	deadline := time.Now().Add(3 * time.Second)
	repeats := 0
	for time.Now().Before(deadline) {
		if _, err := c.read(time.Until(deadline)); err != nil {
			break
		}
		repeats++
	}
	if repeats > 1 {
		t.Errorf("%d progress events after the feed was deleted, want at most the one in flight", repeats)
	}
}

func TestSubscriptionUnknownFeed(t *testing.T) {
	f := newFixture(t, storetest.NewSQLite(t))
	f.withRunner()
	c := f.dialWS(nil)
	c.init(map[string]any{"username": "admin", "apiKey": adminKey})
	c.subscribe("1", `subscription { feedStatusChanged(feedId: "999") { id } }`)
	m, err := c.read(5 * time.Second)
	if err != nil || !strings.Contains(string(m.Payload), `"code":"NOT_FOUND"`) {
		t.Errorf("got %+v %v, want a NOT_FOUND error", m, err)
	}
}
