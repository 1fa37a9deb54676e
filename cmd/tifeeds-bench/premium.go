package main

// The six premium kinds, each from its simulated vendor (generated as it is
// sent: the parent holds no copy of a list) into SQLite through the real
// runner and store, in a child process whose peak RSS is its own (see
// peakRSS). The vendors answer from this (parent) process on loopback: the
// fixed vendor hosts through the feed mirror, as `serve --feed-mirror`
// reaches them, the TAXII server and the feed-list endpoint (typed by the
// user, never mirrored) directly. A kind whose polls are bounded (50,000 a
// poll for FEED_LIST and ENDPOINT_PROTECTION, the constant rate's share for
// RISK_LIST) is polled again as soon as a poll ends, until the whole list
// is in: its figures cover every poll.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tifeeds/tifeeds/feeds"
	"github.com/tifeeds/tifeeds/ingest"
	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/ingest/premium/gti"
	"github.com/tifeeds/tifeeds/ingest/premium/risklist"
	"github.com/tifeeds/tifeeds/ingest/taxii/taxiitest"
	"github.com/tifeeds/tifeeds/store"
)

const premiumChildArg = "-premium-child"

// memProfileEnv, when set, names the file where each premium child writes
// a heap profile taken at its highest heap (the last child's survives):
// what a peak RSS is made of.
const memProfileEnv = "TIFEEDS_BENCH_MEMPROFILE"

var (
	premiumIndicators = flag.Int("premium-indicators", 200_000, "indicators each premium kind's simulated vendor serves (0 to skip)")
	premiumKinds      = flag.String("premium-kinds", "DARK_WEB_TAXII,THREAT_PLATFORM,THREAT_INTEL_API,RISK_LIST,FEED_LIST,ENDPOINT_PROTECTION",
		"premium kinds measured, comma-separated")
	// The server's default (ingest.DefaultWriteRate, about 6,944 an hour)
	// would spread 200,000 risk-list rows over more than a day of polls.
	premiumRiskRate = flag.Float64("premium-risk-list-rate", 50_000,
		"RISK_LIST's constant rate in IoCs an hour for the bench (polled hourly: each poll's share)")
)

// The child is started with premiumChildArg before main parses flags: it
// runs one premium feed to the end of its list and exits.
func init() {
	if len(os.Args) > 1 && os.Args[1] == premiumChildArg {
		log.SetFlags(0)
		if err := premiumChild(os.Args[2:]); err != nil {
			log.Fatalf("tifeeds-bench premium child: %v", err)
		}
		os.Exit(0)
	}
}

// premiumJob is what a premium child runs, passed as JSON.
type premiumJob struct {
	Kind      premium.Kind
	Settings  feeds.FeedUpdate
	Endpoint  string  // FEED_LIST: the feed's endpoint, with its key
	WriteRate float64 // RISK_LIST: IoCs an hour
	Want      int64   // distinct indicators the vendor serves
}

// premiumResult is what a premium child reports on stdout.
type premiumResult struct {
	Polls    int     `json:"polls"`
	Stored   int64   `json:"stored"`   // over every poll
	Live     int64   `json:"live"`     // the feed's sightings at the end
	Rejected int64   `json:"rejected"` // over every poll
	Seconds  float64 `json:"seconds"`  // the runs' time, summed
	MaxRSS   int64   `json:"max_rss"`  // bytes: the child's VmHWM
}

// benchPremium measures each premium kind with *premiumIndicators
// indicators from its simulated vendor into SQLite.
func benchPremium(ctx context.Context, dir string) error {
	n := *premiumIndicators
	if n <= 0 {
		return nil
	}
	now := time.Now()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var mu sync.Mutex // the next kind's vendor is added between runs
	hosts := map[string]http.Handler{}
	handle := func(host string, h http.Handler) {
		mu.Lock()
		defer mu.Unlock()
		hosts[host] = h
	}
	// The mirror's layout: /<vendor host>/<path>; the feed-list endpoint
	// (not mirrored) is under the same layout, typed as it is.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		host, path, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		mu.Lock()
		h, ok := hosts[host]
		mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		vr := r.Clone(r.Context())
		vr.URL.Host, vr.Host, vr.URL.Path, vr.URL.RawPath = host, host, "/"+path, ""
		h.ServeHTTP(w, vr)
	})

	var taxiiSrv *taxiitest.Server
	jobs := map[premium.Kind]func() (premiumJob, string, error){
		premium.DarkWebTAXII: func() (premiumJob, string, error) {
			taxiiSrv = newTAXIIBench(n, now.Add(-24*time.Hour))
			url := taxiiSrv.CollectionURL(taxiiBenchCollection)
			return premiumJob{Settings: feeds.FeedUpdate{CollectionURL: &url, Username: ptr("analyst"), Password: ptr("taxii-bench-pass")}},
				fmt.Sprintf("TAXII 2.1 collection, %d STIX indicators in pages of 1,000", n), nil
		},
		premium.ThreatPlatform: func() (premiumJob, string, error) {
			handle("api.threatstream.com", &vendortest.ThreatStream{Username: "analyst", Key: "ts-bench-key", Generated: n,
				Generate: func(i int) []byte { return vendortest.ThreatStreamObject(i, now.Add(-time.Hour)) }})
			return premiumJob{Settings: feeds.FeedUpdate{Username: ptr("analyst"), APIKey: ptr("ts-bench-key")}},
				fmt.Sprintf("ThreatStream intelligence, %d objects in pages of 1,000", n), nil
		},
		premium.ThreatIntelAPI: func() (premiumJob, string, error) {
			// The lists' packages of the last 24 hours that ended, evenly;
			// a run reads back two days (backfill 2): an hour passing
			// between here and the child's run loses none.
			g := vendortest.NewGTI("gti-bench-key")
			last := now.UTC().Truncate(time.Hour).Add(-time.Hour)
			const hours = 24
			packages := hours * len(gti.Lists)
			g.Generate = func(list, hour string) io.WriterTo {
				h, err := time.Parse("2006010215", hour)
				back := int(last.Sub(h) / time.Hour)
				if err != nil || back < 0 || back >= hours {
					return nil
				}
				for li, l := range gti.Lists {
					if l == list {
						p := li*hours + back
						first := n * p / packages
						return vendortest.GTIPackage(first, n*(p+1)/packages-first)
					}
				}
				return nil
			}
			handle(vendortest.GTIHost, g)
			return premiumJob{Settings: feeds.FeedUpdate{APIKey: ptr("gti-bench-key"), BackfillDays: ptr(2)}},
				fmt.Sprintf("threat lists, %d objects in %d hourly packages of %d lists", n, packages, len(gti.Lists)), nil
		},
		premium.RiskList: func() (premiumJob, string, error) {
			rf := vendortest.NewRecordedFuture("rf-bench-token")
			var size int
			for i, l := range risklist.Lists {
				rows := n*(i+1)/len(risklist.Lists) - n*i/len(risklist.Lists)
				gz, err := vendortest.GzipRiskList(l, rows)
				if err != nil {
					return premiumJob{}, "", err
				}
				size += len(gz)
				rf.SetGzipList(l, gz)
			}
			handle(vendortest.RecordedFutureHost, rf)
			return premiumJob{Settings: feeds.FeedUpdate{APIKey: ptr("rf-bench-token"), PollingFrequency: ptr(1)}, WriteRate: *premiumRiskRate},
				fmt.Sprintf("risk lists, %d rows in %d gzip CSV lists (%.1f MB compressed), %s IoCs an hour polled hourly",
					n, len(risklist.Lists), float64(size)/1e6, strconv.FormatFloat(*premiumRiskRate, 'f', -1, 64)), nil
		},
		premium.FeedList: func() (premiumJob, string, error) {
			handle(vendortest.SOCRadarHost, &vendortest.SOCRadar{Key: "socradar-bench-key", Generate: map[string]func(io.Writer) error{
				"bench": func(w io.Writer) error { return vendortest.WriteSOCRadarDocument(w, 0, n) }}})
			var cw countWriter
			if err := vendortest.WriteSOCRadarDocument(&cw, 0, n); err != nil {
				return premiumJob{}, "", err
			}
			return premiumJob{Endpoint: vendortest.SOCRadarEndpoint(srv.URL+"/"+vendortest.SOCRadarHost, "bench", "socradar-bench-key")},
				fmt.Sprintf("feed-list document, %d items, %.1f MB, at most 50,000 a poll", n, float64(cw.n)/1e6), nil
		},
		premium.EndpointProtection: func() (premiumJob, string, error) {
			handle("api.crowdstrike.com", &vendortest.Falcon{ClientID: "falcon-bench-id", Secret: "falcon-bench-secret", Generated: n,
				Generate: func(i int) []byte { return vendortest.FalconIndicator(i, now.Add(-time.Hour)) }})
			return premiumJob{Settings: feeds.FeedUpdate{ClientID: ptr("falcon-bench-id"), ClientSecret: ptr("falcon-bench-secret")}},
				fmt.Sprintf("Falcon indicators, %d in pages of 1,000, at most 50,000 a poll", n), nil
		},
	}
	defer func() {
		if taxiiSrv != nil {
			taxiiSrv.Close()
		}
	}()

	fmt.Printf("Premium kinds, %d indicators each from the simulated vendor into SQLite (the real runner and store, one child process each; target < 150 MB RSS)\n", n)
	for _, k := range strings.Split(*premiumKinds, ",") {
		kind := premium.Kind(strings.TrimSpace(k))
		setup, ok := jobs[kind]
		if !ok {
			return fmt.Errorf("-premium-kinds: unknown kind %q", kind)
		}
		job, what, err := setup()
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		job.Kind, job.Want = kind, int64(n)
		db := filepath.Join(dir, "premium-"+string(kind)+".db")
		if err := removeDB(db); err != nil {
			return err
		}
		r, err := premiumChildRun("sqlite:"+db, dir, srv.URL, job)
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		fmt.Printf("  %-20s %s\n  %-20s %7d IoCs in %5.1f s over %d poll(s): %7.0f IoCs/s; peak RSS %6.1f MB\n",
			kind, what, "", r.Live, r.Seconds, r.Polls, float64(r.Live)/r.Seconds, mb(r.MaxRSS))
	}
	fmt.Println()
	return nil
}

func ptr[T any](v T) *T { return &v }

// premiumChildRun runs job in a child process.
func premiumChildRun(dsn, dir, mirror string, job premiumJob) (premiumResult, error) {
	j, err := json.Marshal(job)
	if err != nil {
		return premiumResult{}, err
	}
	return childResult[premiumResult](premiumChildArg, dsn, dir, mirror, string(j))
}

// premiumChild configures the premium feed of the job's kind as a user
// would (its settings through the runner, then enabled, which runs it),
// polls it again each time a run ends until its list is in, and prints a
// premiumResult. The sources are registered as serve registers them, the
// vendor hosts through the mirror.
func premiumChild(args []string) error {
	if len(args) != 4 {
		return errors.New("usage: " + premiumChildArg + " DSN DIR MIRROR JOB")
	}
	dsn, dir, mirror := args[0], args[1], args[2]
	var job premiumJob
	if err := json.Unmarshal([]byte(args[3]), &job); err != nil {
		return fmt.Errorf("job: %w", err)
	}
	ctx := context.Background()
	if path := os.Getenv(memProfileEnv); path != "" {
		stop := watchHeap(path)
		defer stop()
	}
	st, secrets, err := openChildStore(ctx, dsn, dir)
	if err != nil {
		return err
	}
	defer st.Close()
	// Loopback servers: the default client, not the egress policy's.
	sources := ingest.NewRegistry(ingest.RegistryOptions{Client: http.DefaultClient, VendorClient: vendortest.MirrorClient(mirror)})
	sources.Register(ingest.Kinds(ingest.KindOptions{WriteRate: job.WriteRate})...)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner, err := ingest.New(ingest.Options{Store: st, Secrets: secrets, Sources: sources, Log: logger})
	if err != nil {
		return err
	}
	service, err := feeds.New(feeds.Options{Store: st, Secrets: secrets, Bus: runner.Bus(), Sources: sources, Runner: runner, Log: logger})
	if err != nil {
		return err
	}
	if err := service.EnsurePremiumFeeds(ctx); err != nil {
		return err
	}
	var feed *store.Feed
	if job.Kind == premium.FeedList {
		if feed, err = service.CreatePremiumFeed(ctx, feeds.PremiumFeedInput{Kind: job.Kind, Name: "bench", APIEndpoint: job.Endpoint}); err != nil {
			return err
		}
	} else {
		feed = new(store.Feed)
		if err := st.DB.NewSelect().Model(feed).Where("type = ? AND kind = ?", store.FeedPremium, job.Kind).Scan(ctx); err != nil {
			return fmt.Errorf("the %s feed: %w", job.Kind, err)
		}
		if _, err := service.UpdateFeed(ctx, feed.ID, job.Settings); err != nil {
			return err
		}
	}
	if err := runner.Start(ctx); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		runner.Stop(sctx)
	}()
	if _, err := service.SetEnabled(ctx, feed.ID, true, false); err != nil {
		return err
	}
	var res premiumResult
	var lastRun int64
	deadline := time.Now().Add(30 * time.Minute)
	for {
		var run store.FeedRun
		err := st.DB.NewSelect().Model(&run).Where("feed_id = ? AND id > ? AND ended_at IS NOT NULL", feed.ID, lastRun).
			Order("id").Limit(1).Scan(ctx)
		if err != nil {
			if time.Now().After(deadline) {
				return errors.New("no run ended in time")
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if run.ErrorKind != "" {
			return fmt.Errorf("run %d failed: %s: %s", res.Polls+1, run.ErrorKind, run.ErrorDetail)
		}
		lastRun = run.ID
		res.Polls++
		res.Stored += run.Stored
		res.Rejected += run.Rejected
		res.Seconds += run.EndedAt.Sub(run.StartedAt).Seconds()
		if res.Live, err = st.DB.NewSelect().Table("sightings").Where("feed_id = ?", feed.ID).Count(ctx); err != nil {
			return err
		}
		if res.Live >= job.Want || run.Stored == 0 {
			break
		}
		if res.Polls >= 20 {
			return fmt.Errorf("%d of %d IoCs after %d polls", res.Live, job.Want, res.Polls)
		}
		if _, err := service.RunNow(ctx, feed.ID); err != nil {
			return err
		}
	}
	if res.Live != job.Want {
		return fmt.Errorf("%d IoCs stored of the %d served (%d rejected)", res.Live, job.Want, res.Rejected)
	}
	if res.MaxRSS, err = peakRSS(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

// taxiiBenchCollection is the TAXII collection served.
const taxiiBenchCollection = "91a7b528-80eb-42ed-a74d-c6fbd5a26116"

// newTAXIIBench starts a TAXII 2.1 server whose collection holds n
// indicators generated as they are sent (object i added at base + i µs),
// paged by offset: taxiitest answers discovery and the collections, the
// hook the objects endpoint.
func newTAXIIBench(n int, base time.Time) *taxiitest.Server {
	ts := taxiitest.NewServer(taxiitest.Collection{ID: taxiiBenchCollection, Title: "Bench", CanRead: true})
	ts.Username, ts.Password = "analyst", "taxii-bench-pass"
	objects := ts.APIRootPath + "collections/" + taxiiBenchCollection + "/objects/"
	base = base.UTC().Truncate(time.Second)
	added := func(i int) time.Time { return base.Add(time.Duration(i) * time.Microsecond) }
	ts.Hook = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != objects {
			return false
		}
		if u, p, ok := r.BasicAuth(); !ok || u != ts.Username || p != ts.Password {
			return false // taxiitest refuses it
		}
		q := r.URL.Query()
		start := 0
		if v := q.Get("added_after"); v != "" {
			after, err := time.Parse(time.RFC3339Nano, v)
			if err != nil {
				http.Error(w, "bad added_after", http.StatusBadRequest)
				return true
			}
			if after.Compare(base) >= 0 {
				start = min(int(after.Sub(base)/time.Microsecond)+1, n)
			}
		}
		offset, _ := strconv.Atoi(q.Get("next"))
		limit, err := strconv.Atoi(q.Get("limit"))
		if err != nil || limit < 1 {
			limit = 1000
		}
		from := min(start+offset, n)
		to := min(from+limit, n)
		w.Header().Set("Content-Type", taxiitest.MediaType)
		if to > from {
			w.Header().Set("X-TAXII-Date-Added-First", added(from).Format(taxiitest.TimeLayout))
			w.Header().Set("X-TAXII-Date-Added-Last", added(to-1).Format(taxiitest.TimeLayout))
		}
		var b strings.Builder
		fmt.Fprintf(&b, `{"more":%t`, to < n)
		if to < n {
			fmt.Fprintf(&b, `,"next":"%d"`, to-start)
		}
		b.WriteString(`,"objects":[`)
		for i := from; i < to; i++ {
			if i > from {
				b.WriteByte(',')
			}
			kind, value := vendortest.GeneratedValue(i)
			pattern := [vendortest.GenKinds]string{"[ipv4-addr:value = '%s']", "[domain-name:value = '%s']",
				"[url:value = '%s']", "[file:hashes.'SHA-256' = '%s']"}[kind]
			fmt.Fprintf(&b, `{"type":"indicator","spec_version":"2.1","id":"indicator--00000000-0000-4000-8000-%012d",`+
				`"created":"2026-01-01T00:00:00.000Z","modified":"2026-01-01T00:00:00.000Z","name":"Bench indicator %d",`+
				`"indicator_types":["malicious-activity"],"pattern":%q,"pattern_type":"stix","valid_from":"2026-01-01T00:00:00Z",`+
				`"confidence":%d,"labels":["bench"]}`, i, i, fmt.Sprintf(pattern, value), 50+i%50)
		}
		b.WriteString("]}")
		io.WriteString(w, b.String())
		return true
	}
	return ts
}

// watchHeap writes a heap profile to path each time the heap in use grows
// by 4 MiB past its highest, until stop is called.
func watchHeap(path string) (stop func()) {
	done := make(chan struct{})
	go func() {
		var peak uint64
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse < peak+4<<20 {
				continue
			}
			peak = m.HeapInuse
			if f, err := os.Create(path); err == nil {
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		}
	}()
	return func() { close(done) }
}
