package notify_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/notify"
	"github.com/tifeeds/tifeeds/store"
)

// clock is a time the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Now().UTC().Truncate(time.Second)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is one instance's notification services over a store.
type env struct {
	st       *store.Store
	secrets  *store.Secrets
	clock    *clock
	bus      *events.Bus
	worker   *notify.Worker
	channels *notify.Channels
	assets   *notify.Assets
	health   *notify.Health
}

var testKey = []byte("0123456789abcdef0123456789abcdef")

func newEnv(t *testing.T, st *store.Store, c *clock) *env {
	t.Helper()
	secrets, err := store.NewSecrets(testKey)
	if err != nil {
		t.Fatal(err)
	}
	bus := events.NewBus()
	w := notify.NewWorker(notify.WorkerOptions{Store: st, Secrets: secrets,
		Webhooks: notify.NewWebhooks(egress.Options{AllowPrivate: true}), Now: c.Now})
	log := audit.New(st, nil)
	return &env{st: st, secrets: secrets, clock: c, bus: bus, worker: w,
		channels: &notify.Channels{Store: st, Secrets: secrets, Audit: log, Worker: w, Now: c.Now},
		assets:   &notify.Assets{Store: st, Bus: bus, Worker: w, Audit: log, Now: c.Now},
		health:   &notify.Health{Store: st, Bus: bus, Worker: w, Audit: log, Now: c.Now}}
}

func rootCtx() context.Context {
	return auth.WithUser(context.Background(), &store.User{ID: 1, Username: "root", Scope: store.ScopeRoot, Enabled: true})
}

func tenantCtx(tenantID string) context.Context {
	id := tenantID
	return auth.WithUser(context.Background(), &store.User{ID: 2, Username: "analyst-" + tenantID, Scope: store.ScopeTenant,
		TenantID: &id, Enabled: true})
}

func newTenant(t *testing.T, st *store.Store, name string) string {
	t.Helper()
	tn, err := st.CreateTenant(context.Background(), store.TenantInput{Name: store.Some(name)}, store.TenantRules{})
	if err != nil {
		t.Fatal(err)
	}
	return tn.ID
}

func newFeed(t *testing.T, st *store.Store, name string) *store.Feed {
	t.Helper()
	f := &store.Feed{Name: name, Type: store.FeedCustom, Category: store.CategoryTSV, Enabled: true, PollingFrequency: 1,
		RetentionPeriod: 30, StatusMessage: store.MessageSuccess, CollectionURL: "https://feeds.example.org/" + name + ".tsv"}
	if err := st.CreateFeed(context.Background(), f); err != nil {
		t.Fatal(err)
	}
	return f
}

// receiver is a webhook receiver: it checks each request's signature with
// its own HMAC and records what came, failing the first failFirst requests.
type receiver struct {
	t      *testing.T
	secret string
	srv    *httptest.Server

	mu        sync.Mutex
	failFirst int
	requests  []received
}

type received struct {
	event, delivery string
	signed          bool
	body            map[string]any
}

func newReceiver(t *testing.T, secret string, failFirst int) *receiver {
	r := &receiver{t: t, secret: secret, failFirst: failFirst}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	// The receiver's own check, as the README shows it.
	m := hmac.New(sha256.New, []byte(r.secret))
	m.Write(raw)
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	got := req.Header.Get("X-Tifeeds-Signature")
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	r.mu.Lock()
	r.requests = append(r.requests, received{event: req.Header.Get("X-Tifeeds-Event"), delivery: req.Header.Get("X-Tifeeds-Delivery"),
		signed: hmac.Equal([]byte(got), []byte(want)), body: body})
	fail := len(r.requests) <= r.failFirst
	r.mu.Unlock()
	if fail {
		http.Error(w, "not now", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) got() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.requests...)
}

// outbox returns the events and bodies waiting in the outbox, oldest first.
func outbox(t *testing.T, st *store.Store) []map[string]any {
	t.Helper()
	var bodies []string
	if err := st.DB.NewRaw("SELECT body FROM notify_outbox ORDER BY id").Scan(context.Background(), &bodies); err != nil {
		t.Fatal(err)
	}
	out := make([]map[string]any, len(bodies))
	for i, b := range bodies {
		if err := json.Unmarshal([]byte(b), &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func clearOutbox(t *testing.T, st *store.Store) {
	t.Helper()
	if _, err := st.DB.ExecContext(context.Background(), "DELETE FROM notify_outbox"); err != nil {
		t.Fatal(err)
	}
}

func data(m map[string]any) map[string]any {
	d, _ := m["data"].(map[string]any)
	return d
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if strings.EqualFold(x, v) {
			return true
		}
	}
	return false
}
