package notify_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/notify"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// A webhook is signed with its channel's secret (checked by the
// receiver's own HMAC), retried with the same delivery id while the
// receiver fails, and logged attempt by attempt.
func TestWebhookSignedAndRetriedWithTheSameDelivery(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := rootCtx()
		e := newEnv(t, st, newClock())
		const secret = "a-secret-only-the-receiver-knows"
		rcv := newReceiver(t, secret, 2)
		ch, shown, err := e.channels.Create(ctx, notify.ChannelInput{Kind: store.ChannelWebhook, Name: "SOC", Target: []string{rcv.srv.URL + "/hook"},
			Secret: secret, Events: []string{store.EventFeedHealth}})
		if err != nil {
			t.Fatal(err)
		}
		if shown != secret {
			t.Fatalf("the secret shown at creation = %q", shown)
		}
		stored, err := st.Channel(ctx, ch.ID)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(stored.Secret), secret) {
			t.Fatal("the secret is stored in clear")
		}
		if err := e.channels.Test(ctx, ch.ID); err != nil {
			t.Fatal(err)
		}
		for attempt := 1; attempt <= 3; attempt++ {
			n, err := e.worker.DeliverDue(ctx)
			if err != nil || n != 1 {
				t.Fatalf("attempt %d: claimed %d, %v", attempt, n, err)
			}
			if attempt < 3 {
				// Not due again before its backoff.
				if n, _ := e.worker.DeliverDue(ctx); n != 0 {
					t.Fatalf("attempt %d: claimed again before the backoff", attempt)
				}
				e.clock.Add(notify.Backoff(attempt))
			}
		}
		got := rcv.got()
		if len(got) != 3 {
			t.Fatalf("the receiver got %d requests, want 3", len(got))
		}
		for i, r := range got {
			if !r.signed {
				t.Errorf("request %d: the signature does not verify", i)
			}
			if r.delivery == "" || r.delivery != got[0].delivery {
				t.Errorf("request %d: delivery %q, want %q (the same across retries)", i, r.delivery, got[0].delivery)
			}
			if r.event != store.EventTest || r.body["event"] != store.EventTest || r.body["delivery"] != r.delivery {
				t.Errorf("request %d: event %q body %v", i, r.event, r.body)
			}
		}
		if n, _ := st.OutboxLen(ctx); n != 0 {
			t.Fatalf("%d notifications left in the outbox after delivery", n)
		}
		log, err := e.channels.Deliveries(ctx, ch.ID, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) != 3 || log[0].Status != store.DeliveryDelivered || log[1].Status != store.DeliveryRetrying ||
			log[2].Status != store.DeliveryRetrying || log[2].HTTPStatus != 503 || log[0].Attempt != 3 {
			t.Fatalf("delivery log = %+v", log)
		}
	})
}

// A receiver that never answers is tried for 24 hours, then given up.
func TestWebhookGivenUpAfterTheRetryWindow(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := rootCtx()
		e := newEnv(t, st, newClock())
		rcv := newReceiver(t, "0123456789abcdef", 1000)
		ch, _, err := e.channels.Create(ctx, notify.ChannelInput{Kind: store.ChannelWebhook, Name: "down", Target: []string{rcv.srv.URL},
			Secret: "0123456789abcdef", Events: []string{store.EventFeedHealth}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.channels.Test(ctx, ch.ID); err != nil {
			t.Fatal(err)
		}
		attempts := 0
		for range 100 {
			n, err := e.worker.DeliverDue(ctx)
			if err != nil {
				t.Fatal(err)
			}
			attempts += n
			if left, _ := st.OutboxLen(ctx); left == 0 {
				break
			}
			e.clock.Add(time.Hour)
		}
		if left, _ := st.OutboxLen(ctx); left != 0 {
			t.Fatal("the notification is still tried after 24 hours")
		}
		log, _ := e.channels.Deliveries(ctx, ch.ID, 100, 0)
		if log[0].Status != store.DeliveryGaveUp || len(rcv.got()) != attempts || attempts < 20 || attempts > 30 {
			t.Fatalf("attempts %d, last %+v", attempts, log[0])
		}
	})
}

// A webhook goes only where the egress policy allows: loopback is refused
// by default, and the refusal is logged.
func TestWebhookFollowsTheEgressPolicy(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := rootCtx()
		c := newClock()
		e := newEnv(t, st, c)
		rcv := newReceiver(t, "0123456789abcdef", 0)
		secrets, _ := store.NewSecrets(testKey)
		strict := notify.NewWorker(notify.WorkerOptions{Store: st, Secrets: secrets, Webhooks: notify.NewWebhooks(egress.Options{}), Now: c.Now})
		ch, _, err := e.channels.Create(ctx, notify.ChannelInput{Kind: store.ChannelWebhook, Name: "inside", Target: []string{rcv.srv.URL},
			Events: []string{store.EventFeedHealth}})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.channels.Test(ctx, ch.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := strict.DeliverDue(ctx); err != nil {
			t.Fatal(err)
		}
		if len(rcv.got()) != 0 {
			t.Fatal("the webhook reached a loopback address the policy refuses")
		}
		log, _ := e.channels.Deliveries(ctx, ch.ID, 10, 0)
		if len(log) != 1 || log[0].Status != store.DeliveryRetrying || !strings.Contains(log[0].Error, "loopback") {
			t.Fatalf("delivery log = %+v", log)
		}
		// Bad URLs are refused at creation.
		for _, u := range []string{"ftp://example.org/x", "https://user:pw@example.org/", "not a url"} {
			_, _, err := e.channels.Create(ctx, notify.ChannelInput{Kind: store.ChannelWebhook, Name: "bad", Target: []string{u},
				Events: []string{store.EventFeedHealth}})
			var ve *store.ValidationError
			if !errors.As(err, &ve) || ve.Field != "url" {
				t.Errorf("%s: err = %v, want a url field error", u, err)
			}
		}
	})
}

// Each notification is sent once, cluster-wide: two instances' workers
// claim from one outbox, and a worker killed with notifications leased
// leaves them to the others once the lease expires.
func TestDeliveredOnceByTwoInstancesAndAfterAKill(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := rootCtx()
		c := newClock()
		a := newEnv(t, st, c)
		other := st
		if st.Dialect == store.Postgres {
			// A second instance: its own connections to the same database.
			var name string
			if err := st.DB.QueryRow("SELECT current_database()").Scan(&name); err != nil {
				t.Fatal(err)
			}
			dsn := strings.Replace(storetest.PostgresDSN(t), "/postgres", "/"+name, 1)
			var err error
			if other, err = store.Open(context.Background(), dsn); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { other.Close() })
		}
		b := newEnv(t, other, c)
		rcv := newReceiver(t, "0123456789abcdef", 0)
		ch, _, err := a.channels.Create(ctx, notify.ChannelInput{Kind: store.ChannelWebhook, Name: "all", Target: []string{rcv.srv.URL},
			Secret: "0123456789abcdef", Events: []string{store.EventFeedHealth}})
		if err != nil {
			t.Fatal(err)
		}
		const total = 60
		for range total {
			if err := a.channels.Test(ctx, ch.ID); err != nil {
				t.Fatal(err)
			}
		}
		// The killed worker: it leased ten and never finished.
		leased, err := st.ClaimOutbox(ctx, c.Now(), c.Now().Add(notify.DefaultLease), "killed", 10)
		if err != nil || len(leased) != 10 {
			t.Fatalf("leased %d, %v", len(leased), err)
		}
		drain := func(e *env, done chan<- error) {
			for {
				n, err := e.worker.DeliverDue(ctx)
				if err != nil || n == 0 {
					done <- err
					return
				}
			}
		}
		done := make(chan error, 2)
		go drain(a, done)
		go drain(b, done)
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		if got := len(rcv.got()); got != total-10 {
			t.Fatalf("before the lease expired %d were sent, want %d", got, total-10)
		}
		c.Add(notify.DefaultLease + time.Second)
		go drain(a, done)
		go drain(b, done)
		for range 2 {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
		seen := map[string]int{}
		for _, r := range rcv.got() {
			seen[r.delivery]++
		}
		if len(seen) != total {
			t.Fatalf("%d distinct deliveries, want %d", len(seen), total)
		}
		for id, n := range seen {
			if n != 1 {
				t.Errorf("delivery %s sent %d times", id, n)
			}
		}
		// The killed worker's late answer finds its lease gone.
		err = st.FinishDelivery(ctx, &leased[0], "killed", &store.Delivery{Status: store.DeliveryDelivered}, time.Time{})
		if !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("a lost lease finished: %v", err)
		}
	})
}

// A worker sends the notifications it claimed side by side, each still
// once: a receiver that answers only once several requests are in flight
// at the same time gets them all on the first attempt (one at a time, the
// first would wait for the others in vain and fail).
func TestWorkerSendsAClaimSideBySide(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := rootCtx()
		e := newEnv(t, st, newClock())
		const together = 4
		var (
			mu       sync.Mutex
			inFlight int
			arrived  = make(chan struct{})
			got      = map[string]int{}
		)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			inFlight++
			got[r.Header.Get("X-Tifeeds-Delivery")]++
			if inFlight == together {
				close(arrived)
			}
			mu.Unlock()
			select {
			case <-arrived:
				w.WriteHeader(http.StatusNoContent)
			case <-time.After(5 * time.Second):
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		}))
		t.Cleanup(srv.Close)
		ch, _, err := e.channels.Create(ctx, notify.ChannelInput{Kind: store.ChannelWebhook, Name: "SOC", Target: []string{srv.URL + "/hook"},
			Secret: "a-secret-of-sixteen-bytes", Events: []string{store.EventFeedHealth}})
		if err != nil {
			t.Fatal(err)
		}
		for range together {
			if err := e.channels.Test(ctx, ch.ID); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := e.worker.DeliverDue(ctx); err != nil || n != together {
			t.Fatalf("claimed %d, %v; want %d", n, err, together)
		}
		log, err := e.channels.Deliveries(ctx, ch.ID, 10, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range log {
			if d.Status != store.DeliveryDelivered || d.Attempt != 1 {
				t.Errorf("delivery %+v, want delivered at the first attempt", d)
			}
		}
		if len(log) != together || len(got) != together {
			t.Fatalf("%d deliveries logged, %d distinct delivery ids received; want %d each", len(log), len(got), together)
		}
		for id, n := range got {
			if n != 1 {
				t.Errorf("delivery %s received %d times", id, n)
			}
		}
	})
}
