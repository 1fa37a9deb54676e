package notify_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/notify"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

const (
	// killChildEnv, set, makes the test binary the outbox worker that
	// TestOutboxExactlyOnceAcrossAKilledWorker kills: it sends the outbox
	// of that database until SIGKILL.
	killChildEnv = "TIFEEDS_NOTIFY_KILL_CHILD_DSN"
	// killChildLease is the child worker's lease: short, so that the
	// parent takes over soon after the kill.
	killChildLease = 2 * time.Second
)

func TestMain(m *testing.M) {
	if dsn := os.Getenv(killChildEnv); dsn != "" {
		if err := runKillChild(dsn); err != nil {
			fmt.Fprintln(os.Stderr, "kill child:", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

func runKillChild(dsn string) error {
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	secrets, err := store.NewSecrets(testKey)
	if err != nil {
		return err
	}
	w := notify.NewWorker(notify.WorkerOptions{Store: st, Secrets: secrets,
		Webhooks: notify.NewWebhooks(egress.Options{AllowPrivate: true}), Lease: killChildLease,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	w.Start(ctx)
	select {} // until SIGKILL
}

// holdingReceiver is a webhook receiver that holds every request open
// (never answering it) until release, and answers the later ones 204: the
// killed worker sends several at once, and one it had seen answered before
// the kill would rightly be sent again. It records the delivery id of each
// request and whether its signature held.
type holdingReceiver struct {
	secret string
	held   chan string // the first request's delivery id

	mu       sync.Mutex
	requests []string
	badSig   int
	released bool
}

// release ends the holding and returns the requests held.
func (r *holdingReceiver) release() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.released = true
	return append([]string(nil), r.requests...)
}

func (r *holdingReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	raw, _ := io.ReadAll(req.Body)
	m := hmac.New(sha256.New, []byte(r.secret))
	m.Write(raw)
	id := req.Header.Get("X-Tifeeds-Delivery")
	var body struct{ Delivery string }
	_ = json.Unmarshal(raw, &body)
	r.mu.Lock()
	if !hmac.Equal([]byte(req.Header.Get("X-Tifeeds-Signature")), []byte("sha256="+hex.EncodeToString(m.Sum(nil)))) || body.Delivery != id {
		r.badSig++
	}
	r.requests = append(r.requests, id)
	first, hold := len(r.requests) == 1, !r.released
	r.mu.Unlock()
	if first {
		r.held <- id
	}
	if hold {
		<-req.Context().Done() // the sender is gone
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// A worker killed (SIGKILL) while a receiver holds its request loses
// nothing and sends nothing twice but that request: once its lease ends,
// a worker of another process sends every notification, the interrupted
// one again with the same X-Tifeeds-Delivery, and the delivery log
// records each delivered once.
func TestOutboxExactlyOnceAcrossAKilledWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	dsn := storetest.NewPostgresDSN(t)
	st := openStore(t, dsn)
	defer st.Close()
	e := newEnv(t, st, newClock())
	const secret = "the-receiver-knows-it"
	rcv := &holdingReceiver{secret: secret, held: make(chan string, 1)}
	srv := httptest.NewServer(rcv)
	defer srv.Close()
	ch, _, err := e.channels.Create(rootCtx(), notify.ChannelInput{Kind: store.ChannelWebhook, Name: "SOC", Target: []string{srv.URL + "/hook"},
		Secret: secret, Events: []string{store.EventFeedHealth}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 5
	for i := range n {
		note := store.Notification{Event: store.EventFeedHealth, Body: func(id string) ([]byte, error) {
			return json.Marshal(map[string]any{"delivery": id, "event": store.EventFeedHealth, "data": map[string]int{"n": i}})
		}}
		if _, err := st.Enqueue(context.Background(), nil, note, time.Now()); err != nil {
			t.Fatal(err)
		}
	}

	cmd := exec.Command(os.Args[0], "-test.run", "^$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dsn)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var held string
	select {
	case held = <-rcv.held:
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child sent nothing in a minute; output:\n%s", out.String())
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL, mid-delivery
		t.Fatal(err)
	}
	cmd.Wait()
	interrupted := rcv.release()

	// Another process's worker takes over once the child's leases end.
	ctx, cancel := context.WithCancel(context.Background())
	w := notify.NewWorker(notify.WorkerOptions{Store: st, Secrets: e.secrets,
		Webhooks: notify.NewWebhooks(egress.Options{AllowPrivate: true}), Poll: 50 * time.Millisecond})
	w.Start(ctx)
	defer func() { cancel(); w.Wait() }()
	for deadline := time.Now().Add(time.Minute); countRows(t, st, "notify_outbox") > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d notifications still in the outbox a minute after the kill", countRows(t, st, "notify_outbox"))
		}
	}

	rcv.mu.Lock()
	requests := append([]string(nil), rcv.requests...)
	bad := rcv.badSig
	rcv.mu.Unlock()
	if bad > 0 {
		t.Fatalf("%d requests were not signed right", bad)
	}
	// The held requests, then each notification once: the held ones again
	// with their delivery ids.
	if len(interrupted) == 0 || interrupted[0] != held || len(requests) != len(interrupted)+n {
		t.Fatalf("the receiver got %v, %v of them held, want them and then %d deliveries", requests, interrupted, n)
	}
	seen := map[string]int{}
	for _, id := range requests[len(interrupted):] {
		seen[id]++
	}
	if len(seen) != n {
		t.Fatalf("deliveries after the kill: %v, want %d distinct", seen, n)
	}
	for _, id := range interrupted {
		if seen[id] != 1 {
			t.Fatalf("deliveries after the kill: %v, want the held %s among them", seen, id)
		}
	}
	log, err := st.Deliveries(context.Background(), ch.ID, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	delivered := map[string]int{}
	for _, d := range log {
		if d.Status != store.DeliveryDelivered {
			t.Fatalf("delivery log entry %+v, want only delivered ones", d)
		}
		delivered[d.DeliveryID]++
		if slices.Contains(interrupted, d.DeliveryID) && d.Attempt != 2 {
			t.Fatalf("interrupted delivery %s was logged as attempt %d, want 2 (the killed worker's was the first)", d.DeliveryID, d.Attempt)
		}
	}
	if len(delivered) != n || len(log) != n {
		t.Fatalf("delivery log %v, want each of the %d notifications delivered once", delivered, n)
	}
	for id := range seen {
		if delivered[id] != 1 {
			t.Fatalf("delivery %s logged %d times as delivered", id, delivered[id])
		}
	}
}
