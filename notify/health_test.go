package notify_test

import (
	"context"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/notify"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// A feed that fails, recovers and goes stale is announced once per change
// of state, never per run, and once across instances.
func TestFeedHealthChanges(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := rootCtx()
		c := newClock()
		e := newEnv(t, st, c)
		other := newEnv(t, st, c) // a second instance on the same database
		rcv := newReceiver(t, "0123456789abcdef", 0)
		if _, _, err := e.channels.Create(ctx, notify.ChannelInput{Kind: store.ChannelWebhook, Name: "ops", Target: []string{rcv.srv.URL},
			Secret: "0123456789abcdef", Events: []string{store.EventFeedHealth}}); err != nil {
			t.Fatal(err)
		}
		// A tenant's channel never gets feed health.
		tenant := newTenant(t, st, "Acme")
		if _, _, err := e.channels.Create(tenantCtx(tenant), notify.ChannelInput{Kind: store.ChannelWebhook, Name: "acme",
			Target: []string{rcv.srv.URL}, Events: []string{store.EventAssetHit}}); err != nil {
			t.Fatal(err)
		}
		f := newFeed(t, st, "phish")
		now := c.Now()
		setFeed := func(message string, ingested *time.Time) {
			t.Helper()
			if _, err := st.DB.ExecContext(context.Background(), "UPDATE feeds SET status_message = ?, last_ingestion = ? WHERE id = ?",
				message, ingested, f.ID); err != nil {
				t.Fatal(err)
			}
		}
		check := func(e *env, want ...string) {
			t.Helper()
			if err := e.health.Check(ctx); err != nil {
				t.Fatal(err)
			}
			got := outbox(t, st)
			if len(got) != len(want) {
				t.Fatalf("outbox = %v, want states %v", got, want)
			}
			for i, m := range got {
				if m["event"] != store.EventFeedHealth || data(m)["state"] != want[i] || data(m)["feedName"] != "phish" {
					t.Fatalf("notification %d = %v, want state %s", i, m, want[i])
				}
			}
			clearOutbox(t, st)
		}
		setFeed(store.MessageSuccess, &now)
		check(e)
		setFeed(string("Connection Error"), &now)
		check(e, store.HealthError)
		// The next runs fail again: no new notification, here or elsewhere.
		check(e)
		check(other)
		// A run stopped by a restart says nothing; a good run recovers.
		setFeed(store.MessageStopped, &now)
		check(e)
		setFeed(store.MessageSuccess, &now)
		check(other, store.HealthOK)
		check(e)
		// No ingestion for more than 3 × its polling frequency (1 h).
		c.Add(3*time.Hour + time.Minute)
		check(e, store.HealthStale)
		check(other)
		// A longer threshold: fresh again (a recovery), then stale later.
		hours := 10
		if err := e.health.SetThreshold(ctx, f.ID, &hours); err != nil {
			t.Fatal(err)
		}
		check(e, store.HealthOK)
		c.Add(7 * time.Hour)
		check(e, store.HealthStale)
		later := c.Now()
		setFeed(store.MessageSuccess, &later)
		check(e, store.HealthOK)
		// The message of a failure is in the notification.
		setFeed("Invalid Credentials", &later)
		if err := e.health.Check(ctx); err != nil {
			t.Fatal(err)
		}
		got := outbox(t, st)
		if len(got) != 1 || data(got[0])["message"] != "Invalid Credentials" || data(got[0])["previous"] != store.HealthOK {
			t.Fatalf("outbox = %v", got)
		}
		bad := 0
		if err := e.health.SetThreshold(ctx, f.ID, &bad); err == nil {
			t.Fatal("a zero threshold was taken")
		}
	})
}

// The watch checks on every feed change the bus carries (a run's end, here
// or, through the fanout, on another instance), not only on its tick.
func TestFeedHealthWatchFollowsTheBus(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx, cancel := context.WithCancel(rootCtx())
		c := newClock()
		e := newEnv(t, st, c)
		e.health.Interval = time.Hour // no tick during the test
		if _, _, err := e.channels.Create(ctx, notify.ChannelInput{Kind: store.ChannelWebhook, Name: "ops", Target: []string{"https://hooks.example.org/x"},
			Events: []string{store.EventFeedHealth}}); err != nil {
			t.Fatal(err)
		}
		f := newFeed(t, st, "phish")
		if _, err := st.DB.ExecContext(ctx, "UPDATE feeds SET status_message = 'Fetching Data Error', last_ingestion = ? WHERE id = ?", c.Now(), f.ID); err != nil {
			t.Fatal(err)
		}
		wait := func(state string) {
			t.Helper()
			var got []map[string]any
			for deadline := time.Now().Add(20 * time.Second); len(got) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				got = outbox(t, st)
			}
			if len(got) != 1 || data(got[0])["state"] != state {
				t.Fatalf("outbox = %v, want one %s", got, state)
			}
			clearOutbox(t, st)
		}
		e.health.Watch(ctx)
		defer func() { cancel(); e.health.Wait() }()
		wait(store.HealthError) // the first check, at start
		// Recovered: only the bus can tell the watch before its tick.
		if _, err := st.DB.ExecContext(ctx, "UPDATE feeds SET status_message = 'Success' WHERE id = ?", f.ID); err != nil {
			t.Fatal(err)
		}
		cur, err := st.Feed(ctx, f.ID)
		if err != nil {
			t.Fatal(err)
		}
		e.bus.PublishFeed(cur)
		wait(store.HealthOK)
	})
}
