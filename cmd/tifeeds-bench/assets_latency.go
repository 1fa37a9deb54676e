package main

import (
	"bufio"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/ingest"
	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/notify"
	"github.com/tifeeds/tifeeds/store"
)

// Issue 28, point 5: a hit reaches its webhook within 5 s of the run's
// batch being committed.
const (
	latencyTarget = 5 * time.Second
	// latencyGiveUp is when a hit not delivered yet counts as lost.
	latencyGiveUp = 60 * time.Second
	// latencyHits rows of the latency run hit an asset, spread evenly over
	// latencyBatches batches.
	latencyHits    = 1000
	latencyBatches = 5
)

// benchAssetLatency measures how long hits take from the commit of the
// batch that stored them to a webhook receiver, on each -dbs database.
func benchAssetLatency(ctx context.Context, dir string, batch int) error {
	return eachFreshDB(ctx, filepath.Join(dir, "assets-latency.db"), func(name, dsn string) error {
		return assetLatency(ctx, name, dsn, dir, batch)
	})
}

// assetLatency runs one instance's asset watch and notify worker, as the
// server wires them (cmd/tifeeds/notify.go, with the default poll and
// lease), over a store holding 10,000 tenants × 100 assets and a root
// webhook for ASSET_HIT; ingests, through the BatchSink a run uses,
// latencyBatches batches in which latencyHits rows each hit one asset; and
// times each delivery against its batch's commit.
func assetLatency(ctx context.Context, dbName, dsn, dir string, batch int) error {
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		return err
	}
	start := time.Now()
	if err := addBenchAssets(ctx, st); err != nil {
		return err
	}
	setup := time.Since(start)

	key := make([]byte, 32)
	rand.Read(key)
	secrets, err := store.NewSecrets(key)
	if err != nil {
		return err
	}
	secret := hex.EncodeToString(key[:16])
	recv := newHitReceiver(secret)
	srv := httptest.NewServer(recv)
	defer srv.Close()

	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	bus := events.NewBus()
	auditLog := audit.New(st, log)
	// The server's egress options with --feed-allow-private: the receiver
	// is on loopback, which the default policy refuses.
	w := notify.NewWorker(notify.WorkerOptions{Store: st, Secrets: secrets,
		Webhooks: notify.NewWebhooks(egress.Options{AllowPrivate: true}), Log: log, Lease: notify.DefaultLease})
	channels := &notify.Channels{Store: st, Secrets: secrets, Audit: auditLog, Worker: w, NoEmail: true}
	root := auth.WithUser(ctx, &store.User{ID: 1, Username: "bench", Scope: store.ScopeRoot, Enabled: true})
	if _, _, err := channels.Create(root, notify.ChannelInput{Kind: store.ChannelWebhook, Name: "bench hits",
		Target: []string{srv.URL + "/hits"}, Secret: secret, Events: []string{store.EventAssetHit}}); err != nil {
		return err
	}
	assets := &notify.Assets{Store: st, Bus: bus, Worker: w, Audit: auditLog, Log: log}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	if err := assets.Start(runCtx); err != nil {
		return err
	}
	w.Start(runCtx)
	stopped := false
	stopAll := func() {
		if !stopped {
			stopped = true
			stop()
			w.Wait()
			assets.Wait()
		}
	}
	defer stopAll()

	feed := &store.Feed{Name: "Latency_bench", Type: store.FeedCustom, Category: store.CategoryTSV, Enabled: true,
		PollingFrequency: 24, RetentionPeriod: 30, StatusMessage: store.MessageSuccess, CollectionURL: "https://feeds.example.org/latency.tsv"}
	if err := st.CreateFeed(ctx, feed); err != nil {
		return err
	}
	file := filepath.Join(dir, "latency.tsv")
	rows := latencyBatches * batch
	hitAt, err := writeLatencyFile(file, rows)
	if err != nil {
		return err
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	watch := &commitStamps{Assets: assets}
	sink := ingest.NewBatchSink(st, feed.ID, 0, ingest.BatchOptions{BatchSize: batch, Retention: 30 * 24 * time.Hour, Watch: watch})
	watch.sink = sink
	if _, err := tsv.Read(ctx, f, sink); err != nil {
		return err
	}
	if err := sink.Flush(ctx); err != nil {
		return err
	}
	if s := sink.Stats(); s.Stored != int64(rows) || s.Rejected != 0 {
		return fmt.Errorf("latency run: %d of %d rows stored, %d rejected (first: %+v)", s.Stored, rows, s.Rejected, s.Rejections[:min(3, len(s.Rejections))])
	}
	stamps := watch.all()
	if len(stamps) == 0 {
		return errors.New("latency run: no batch reported covering rows")
	}
	// The commit of the batch that stored each hit row: the first stamp
	// whose count of stored rows passes the row's position.
	committed := make(map[string]time.Time, len(hitAt))
	for value, pos := range hitAt {
		i, _ := slices.BinarySearchFunc(stamps, pos, func(s commitStamp, p int64) int {
			if s.stored <= p {
				return -1
			}
			return 1
		})
		if i == len(stamps) {
			return fmt.Errorf("latency run: no commit reported for row %d", pos)
		}
		committed[value] = stamps[i].at
	}

	// Everything is delivered once the outbox and the pending sightings
	// are empty: a notification leaves the outbox only when its receiver
	// has answered. Waiting for that, rather than for the count, lets a
	// second delivery of a hit arrive to be counted.
	// The store is only asked once every hit has arrived, so that the
	// waiting adds no reads to what is measured.
	last := stamps[len(stamps)-1].at
	for time.Since(last) <= latencyGiveUp {
		if recv.count() < len(hitAt) {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		pending, err := st.PendingAssetSightings(ctx)
		if err != nil {
			return err
		}
		queued, err := st.OutboxLen(ctx)
		if err != nil {
			return err
		}
		if pending == 0 && queued == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopAll()

	got := recv.all()
	var lat []float64
	var problems []string
	seen := map[string]int{}
	for _, r := range got {
		seen[r.value]++
		if !r.signed {
			problems = append(problems, fmt.Sprintf("delivery %s: the signature does not verify", r.delivery))
		}
		at, ok := committed[r.value]
		if !ok {
			problems = append(problems, fmt.Sprintf("delivery %s: %q hits no asset of the run", r.delivery, r.value))
			continue
		}
		if seen[r.value] > 1 {
			problems = append(problems, fmt.Sprintf("%s delivered %d times", r.value, seen[r.value]))
			continue
		}
		d := r.at.Sub(at)
		if d > latencyGiveUp {
			problems = append(problems, fmt.Sprintf("%s delivered %.1f s after its commit", r.value, d.Seconds()))
		}
		lat = append(lat, d.Seconds())
	}
	missing := 0
	for value := range committed {
		if seen[value] == 0 {
			missing++
		}
	}
	if missing > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d hits not delivered within %s of the last commit", missing, len(committed), latencyGiveUp))
	}
	slices.Sort(lat)
	fmt.Printf("Asset hit latency (%s, %d tenants × %d assets set up in %.0f s; %d rows in %d batches of %d, %d hit; root webhook on loopback; the watch and the worker woken by each commit, the worker polling every %s):\n",
		dbName, benchAssetTenants, benchAssetsPerTenant, setup.Seconds(), rows, len(stamps), batch, len(hitAt), notify.DefaultPoll)
	if len(lat) > 0 {
		verdict := "met"
		if lat[len(lat)-1] > latencyTarget.Seconds() {
			verdict = "NOT met"
		}
		once := "once each"
		if len(got) != len(lat) {
			once = fmt.Sprintf("in %d requests", len(got))
		}
		fmt.Printf("  delivered %d of %d %s; commit to receipt: min %.0f ms, median %.0f ms, p95 %.0f ms, max %.0f ms (target ≤ %s: %s); load average %s\n",
			len(lat), len(hitAt), once, lat[0]*1000, median(lat)*1000, percentile(lat, 0.95)*1000, lat[len(lat)-1]*1000, latencyTarget, verdict, loadAverage())
		// When the receipts span much more than the commits, the worker
		// was behind: the latency is then its sending rate's doing.
		first, lastGot := got[0].at, got[0].at
		for _, r := range got {
			first, lastGot = minTime(first, r.at), maxTime(lastGot, r.at)
		}
		fmt.Printf("  the batches committed over %.2f s, the receiver got the hits over %.2f s (%.0f deliveries/s)\n\n",
			last.Sub(stamps[0].at).Seconds(), lastGot.Sub(first).Seconds(), float64(len(got)-1)/lastGot.Sub(first).Seconds())
	}
	if len(problems) > 0 {
		if len(problems) > 10 {
			problems = append(problems[:10], fmt.Sprintf("and %d more", len(problems)-10))
		}
		return fmt.Errorf("asset hit latency (%s): %s", dbName, strings.Join(problems, "; "))
	}
	return nil
}

// addBenchAssets creates benchAssetTenants tenants with their
// benchAssetsPerTenant assets each (benchAsset), through the store.
func addBenchAssets(ctx context.Context, st *store.Store) error {
	values := make([]string, benchAssetsPerTenant)
	for t := range benchAssetTenants {
		tn, err := st.CreateTenant(ctx, store.TenantInput{Name: store.Some(fmt.Sprintf("Bench tenant %d", t))}, store.TenantRules{})
		if err != nil {
			return err
		}
		for j := range values {
			values[j] = benchAsset(t, j)
		}
		assets, err := notify.ParseAssets(values)
		if err != nil {
			return err
		}
		if _, err := st.AddTenantAssets(ctx, tn.ID, assets, notify.MaxAssets, time.Now()); err != nil {
			return err
		}
	}
	return nil
}

// writeLatencyFile writes rows TSV rows of which latencyHits, evenly
// spread, are addresses that tenants watch (one asset each); it returns
// each such address with its row's position. The other rows have the
// shapes of the bench's rows but cover no asset (addresses in 14.0.0.0/8,
// which no benchAsset covers), so that every hit is known.
func writeLatencyFile(path string, rows int) (map[string]int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	step := max(rows/latencyHits, 1)
	hits := make(map[string]int64, latencyHits)
	for i := range rows {
		src, score := fmt.Sprintf("src_%d", i%13), i%101
		var line string
		if h := i / step; i%step == step/2 && h < latencyHits {
			// A single address of tenant h×10 (benchAsset's 0 < j%10 < 4;
			// j = 0 is a range for every hundredth tenant).
			value := benchAsset(h*10%benchAssetTenants, 1+h%3)
			hits[value] = int64(i)
			line = fmt.Sprintf("ip\t%s\t%s\t%d\n", value, src, score)
		} else {
			switch i % 5 {
			case 0:
				line = fmt.Sprintf("domain\tlatency-%d.example.com\t%s\t%d\n", i, src, score)
			case 1:
				line = fmt.Sprintf("ip\t14.%d.%d.%d\t%s\t%d\n", i>>16&255, i>>8&255, i&255, src, score)
			case 2:
				line = fmt.Sprintf("url\thttp://site-%d.example.org/path/%d?id=%d\t%s\t%d\n", i%10007, i, i, src, score)
			case 3:
				line = fmt.Sprintf("sha256-hash\t%064x\t%s\t%d\n", uint64(i)*2654435761, src, score)
			default:
				line = fmt.Sprintf("md5-hash\t%032x\t%s\t%d\n", uint64(i)*40503, src, score)
			}
		}
		if _, err := w.WriteString(line); err != nil {
			return nil, err
		}
	}
	if len(hits) != min(latencyHits, rows) {
		return nil, fmt.Errorf("latency file: %d hit rows, want %d", len(hits), min(latencyHits, rows))
	}
	return hits, w.Flush()
}

// commitStamp is when a batch covering assets was committed, and how many
// rows the run had stored with it.
type commitStamp struct {
	at     time.Time
	stored int64
}

// commitStamps is the asset watch with a clock on Sighted. The sink calls
// Sighted on its writing goroutine right after the batch's transaction
// commits and before the watch hears of it, so the time taken there is
// the commit time (within the microseconds of a Stats call) and can only
// make the latency measured shorter than the true one by as much. The
// pending sightings' own times are not used: they are the batch's Now,
// taken when it is prepared, before the write waits for the batch ahead
// and before its transaction; the outbox row's is the drain's.
type commitStamps struct {
	*notify.Assets
	sink *ingest.BatchSink

	mu     sync.Mutex
	stamps []commitStamp
}

func (c *commitStamps) Covers(kind ioc.Kind, value string) bool { return c.Assets.Covers(kind, value) }

func (c *commitStamps) Sighted() {
	s := commitStamp{at: time.Now(), stored: c.sink.Stats().Stored}
	c.mu.Lock()
	c.stamps = append(c.stamps, s)
	c.mu.Unlock()
	c.Assets.Sighted()
}

// all returns the stamps in commit order (batches commit in order).
func (c *commitStamps) all() []commitStamp {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.stamps)
}

// hitReceiver is a webhook receiver as a customer would write one: it
// checks the signature with its own HMAC of the raw body and notes when
// each hit arrived.
type hitReceiver struct {
	secret string

	mu  sync.Mutex
	got []receivedHit
}

type receivedHit struct {
	delivery, value string
	signed          bool
	at              time.Time
}

func newHitReceiver(secret string) *hitReceiver { return &hitReceiver{secret: secret} }

func (h *hitReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	at := time.Now()
	if err != nil {
		http.Error(w, "unreadable body", http.StatusBadRequest)
		return
	}
	m := hmac.New(sha256.New, []byte(h.secret))
	m.Write(raw)
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	var body struct {
		Data notify.AssetHitData `json:"data"`
	}
	_ = json.Unmarshal(raw, &body)
	h.mu.Lock()
	h.got = append(h.got, receivedHit{delivery: r.Header.Get(notify.HeaderDelivery), value: body.Data.IoCValue,
		signed: hmac.Equal([]byte(r.Header.Get(notify.HeaderSignature)), []byte(want)), at: at})
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (h *hitReceiver) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.got)
}

func (h *hitReceiver) all() []receivedHit {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.got)
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// percentile is the p-quantile of sorted xs (nearest rank).
func percentile(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}

// loadAverage is the machine's 1-minute load average, as /proc/loadavg
// says it ("?" elsewhere): the figures depend on it.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}
