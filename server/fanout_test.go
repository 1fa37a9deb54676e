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

// newInstance starts one tifeeds instance on dsn as `tifeeds serve` wires
// it: its own connection pool, bus with a fanout, runner and server.
func newInstance(t *testing.T, dsn string) *fixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	bus := events.NewBus()
	fanout, err := events.NewFanout(events.FanoutOptions{Store: st, Bus: bus, Log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	fanout.Start(ctx)
	t.Cleanup(fanout.Stop)
	secrets, err := store.NewSecrets([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	sources := ingest.NewRegistryWithClient(egress.NewClient(egress.Options{AllowPrivate: true}))
	sources.Register(tsv.Kind(tsv.Options{TempDir: t.TempDir()}))
	runner, err := ingest.New(ingest.Options{Store: st, Secrets: secrets, Bus: bus, Sources: sources, Log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { runner.Stop(context.Background()) })
	service, err := feeds.New(feeds.Options{Store: st, Secrets: secrets, Bus: bus, Sources: sources, Runner: runner, Allowlist: runner.Allowlist()})
	if err != nil {
		t.Fatal(err)
	}
	s := server.New(server.DefaultConfig(), st, &graph.Resolver{Store: st, Events: bus, Ingest: runner, Feeds: service}, discardLogger())
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return &fixture{t: t, store: st, srv: srv}
}

type feedStatus struct {
	ID            string
	StatusMessage string
	Enabled       bool
	Description   string
}

// statusStream reads feedStatusChanged events off c in the background: a
// gorilla connection is unusable after a read times out, so waits with a
// timeout select on the channel instead.
type statusStream struct {
	t      *testing.T
	events chan feedStatus
	err    chan error
}

func streamStatus(t *testing.T, c *wsClient) *statusStream {
	s := &statusStream{t: t, events: make(chan feedStatus, 64), err: make(chan error, 1)}
	go func() {
		for {
			m, err := c.read(time.Minute)
			if err != nil {
				s.err <- err
				return
			}
			var p struct {
				Data struct{ FeedStatusChanged feedStatus }
			}
			if m.Type != "next" || json.Unmarshal(m.Payload, &p) != nil {
				s.err <- fmt.Errorf("got %s %s", m.Type, m.Payload)
				return
			}
			s.events <- p.Data.FeedStatusChanged
		}
	}()
	return s
}

// next returns the next event, or timedOut when none came within wait.
func (s *statusStream) next(wait time.Duration) (ev feedStatus, timedOut bool) {
	s.t.Helper()
	select {
	case ev := <-s.events:
		return ev, false
	case err := <-s.err:
		s.t.Fatalf("status stream: %v", err)
	case <-time.After(wait):
	}
	return ev, true
}

// TestStatusChangesReachOtherInstances runs two servers on one PostgreSQL
// database: a subscriber of the second sees the changes made through the
// first, including those of a run the first instance carries out.
func TestStatusChangesReachOtherInstances(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	a, b := newInstance(t, dsn), newInstance(t, dsn)
	ctx := context.Background()
	if _, err := a.store.EnsureAdmin(ctx, "admin", "admin-password", adminKey); err != nil {
		t.Fatal(err)
	}
	feedSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ip\t192.0.2.1\tbotnet_x\t90\nip\t192.0.2.2\tbotnet_x\t90\n"))
	}))
	defer feedSrv.Close()
	// Created in the store, after both runners started: neither schedules
	// it, so nothing changes it but this test.
	feed, err := a.store.CreateCustomFeed(ctx, store.NewCustomFeed{Category: store.CategoryTSV, Name: "shared",
		CollectionURL: feedSrv.URL + "/f.tsv", PollingFrequency: 4, RetentionPeriod: 30})
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprint(feed.ID)

	status := b.dialWS(nil)
	status.init(map[string]any{"username": "admin", "apiKey": adminKey})
	status.subscribe("s", `subscription { feedStatusChanged(feedId: "`+id+`") { id statusMessage enabled description } }`)
	events := streamStatus(t, status)

	// The subscription registers on B's bus asynchronously: change the
	// description through A until B shows one change (a bounded wait).
	for try := 1; ; try++ {
		r := a.graphql("admin", adminKey, `mutation { updateFeed(id: "`+id+`", input: {description: "probe `+
			fmt.Sprint(try)+`"}) { id } }`)
		if r.status != http.StatusOK || strings.Contains(string(r.body), `"errors"`) {
			t.Fatalf("updateFeed on A: %d %s", r.status, r.body)
		}
		s, timedOut := events.next(500 * time.Millisecond)
		if !timedOut {
			if s.ID != id || !strings.HasPrefix(s.Description, "probe ") {
				t.Fatalf("B got %+v, want the description set on A", s)
			}
			break
		}
		if try == 20 {
			t.Fatal("B's subscriber saw none of 20 changes made on A")
		}
	}
	// Later probes may still be on their way; skip them.
	wantStatus := func(what string, ok func(feedStatus) bool) {
		t.Helper()
		var last feedStatus
		deadline := time.Now().Add(10 * time.Second)
		for !ok(last) {
			s, timedOut := events.next(time.Until(deadline))
			if timedOut {
				t.Fatalf("B never saw %s (last %+v)", what, last)
			}
			last = s
		}
	}

	r := a.graphql("admin", adminKey, `mutation { setFeedEnabled(id: "`+id+`", enabled: false, confirm: true) { statusMessage } }`)
	if !strings.Contains(string(r.body), `"statusMessage":"Disabled"`) {
		t.Fatalf("disable on A: %s", r.body)
	}
	wantStatus("the feed disabled on A", func(s feedStatus) bool { return s.StatusMessage == "Disabled" && !s.Enabled })

	// Re-enabling on A runs the feed there at once; B follows it to Success.
	r = a.graphql("admin", adminKey, `mutation { setFeedEnabled(id: "`+id+`", enabled: true) { enabled } }`)
	if !strings.Contains(string(r.body), `"enabled":true`) {
		t.Fatalf("enable on A: %s", r.body)
	}
	wantStatus("the run on A succeed", func(s feedStatus) bool { return s.StatusMessage == "Success" && s.Enabled })
}

// TestTenantChangeReachesOtherInstances checks that a tenant GET on one
// instance, answered from its cache, shows a change made on another at once
// after the change's event: B keeps answers for an hour, so only the event
// can drop them.
func TestTenantChangeReachesOtherInstances(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	a, b := newInstance(t, dsn), newInstance(t, dsn)
	b.store.SetTenantCacheTTL(time.Hour)
	ctx := context.Background()
	if _, err := a.store.EnsureAdmin(ctx, "admin", "admin-password", adminKey); err != nil {
		t.Fatal(err)
	}
	r := a.do("POST", api+"/tenants", "admin", adminKey, `{"cust_name":"Acme"}`, nil)
	if r.status != http.StatusCreated {
		t.Fatalf("create on A: %d %s", r.status, r.body)
	}
	var created struct{ Data tenantWire }
	if err := json.Unmarshal(r.body, &created); err != nil {
		t.Fatal(err)
	}
	id := created.Data.CustID
	getOnB := func() tenantWire {
		t.Helper()
		r := b.do("GET", api+"/tenants/"+id, "admin", adminKey, "", nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET on B: %d %s", r.status, r.body)
		}
		var got struct{ Data tenantWire }
		if err := json.Unmarshal(r.body, &got); err != nil {
			t.Fatal(err)
		}
		return got.Data
	}
	// waitOnB polls B until ok holds; false when it never did.
	waitOnB := func(wait time.Duration, ok func(tenantWire) bool) bool {
		deadline := time.Now().Add(wait)
		for {
			if ok(getOnB()) {
				return true
			}
			if time.Now().After(deadline) {
				return false
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	patchOnA := func(body string) {
		t.Helper()
		if r := a.do("PATCH", api+"/tenants/"+id, "admin", adminKey, body, nil); r.status != http.StatusOK {
			t.Fatalf("PATCH on A: %d %s", r.status, r.body)
		}
	}
	// Wait until B hears A (its listener is up): probe with renames.
	for try := 1; ; try++ {
		name := "probe " + itoa(try)
		patchOnA(`{"cust_name":"` + name + `"}`)
		if waitOnB(500*time.Millisecond, func(w tenantWire) bool { return w.CustName == name }) {
			break
		}
		if try == 20 {
			t.Fatal("B saw none of 20 renames made on A")
		}
	}
	// B caches the tenant as it is now; each change on A reaches it.
	getOnB()
	patchOnA(`{"cust_name":"Acme Renamed","contact":"Jane"}`)
	if !waitOnB(10*time.Second, func(w tenantWire) bool { return w.CustName == "Acme Renamed" && w.Contact == "Jane" }) {
		t.Fatalf("B still answers %+v 10 s after the rename on A", getOnB())
	}
	r = a.do("POST", api+"/tenant_groups", "admin", adminKey, `{"tgrp_name":"Gold","tenants":["`+id+`"]}`, nil)
	if r.status != http.StatusCreated {
		t.Fatalf("group on A: %d %s", r.status, r.body)
	}
	if !waitOnB(10*time.Second, func(w tenantWire) bool { return w.TgrpName == "Gold" }) {
		t.Fatalf("B still answers %+v 10 s after the tenant joined a group on A", getOnB())
	}
	if _, err := a.store.CreateUser(ctx, "acme-user", "password1", store.ScopeTenant, &id); err != nil {
		t.Fatal(err)
	}
	if !waitOnB(10*time.Second, func(w tenantWire) bool { return w.UserNum == 1 }) {
		t.Fatalf("B still answers %+v 10 s after a user was added on A", getOnB())
	}
	if r := a.do("DELETE", api+"/tenants/"+id, "admin", adminKey, "", nil); r.status != http.StatusOK {
		t.Fatalf("DELETE on A: %d %s", r.status, r.body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := b.do("GET", api+"/tenants/"+id, "admin", adminKey, "", nil)
		if r.status == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B still answers %d 10 s after the tenant was deleted on A", r.status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// tenantWire is the part of the REST tenant the fanout test reads.
type tenantWire struct {
	CustID   string `json:"cust_id"`
	CustName string `json:"cust_name"`
	Contact  string `json:"contact"`
	TgrpName string `json:"tgrp_name"`
	UserNum  int    `json:"user_num"`
}
