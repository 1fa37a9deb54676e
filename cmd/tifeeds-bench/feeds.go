package main

// The built-in feeds on big lists: a PhishTank-like online-valid.json of
// about 50 MB and an ET Open archive of 300,000 rules, each ingested by the
// real runner into the real store, in a child process whose peak RSS is
// its own. The vendor answers from this (parent) process on loopback, the
// child reading it through the feed mirror as `serve --feed-mirror` does.

import (
	"archive/tar"
	"compress/gzip"
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
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest"
	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
	"github.com/tifeeds/tifeeds/store"
)

const feedChildArg = "-feed-child"

var (
	phishTankRecords = flag.Int("phishtank-records", 110_000, "records of the PhishTank-like list (110,000 make about 50 MB; 0 to skip)")
	etOpenRules      = flag.Int("etopen-rules", 300_000, "rules of the ET Open-like archive (0 to skip)")
)

// The child is started with feedChildArg before main parses flags: it
// runs one built-in feed and exits.
func init() {
	if len(os.Args) > 1 && os.Args[1] == feedChildArg {
		log.SetFlags(0)
		if err := feedChild(os.Args[2:]); err != nil {
			log.Fatalf("tifeeds-bench feed child: %v", err)
		}
		os.Exit(0)
	}
}

// feedResult is what a feed child reports on stdout.
type feedResult struct {
	Stored   int64   `json:"stored"`
	Rejected int64   `json:"rejected"`
	Seconds  float64 `json:"seconds"`
	MaxRSS   int64   `json:"max_rss"` // bytes: the child's VmHWM
}

// benchFeeds ingests the big lists of the built-in feeds into SQLite and,
// when TIFEEDS_TEST_POSTGRES is set, PostgreSQL, and prints their rates and
// peak RSS.
func benchFeeds(ctx context.Context, dir string) error {
	if *phishTankRecords <= 0 && *etOpenRules <= 0 {
		return nil
	}
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	hosts := map[string]http.Handler{}
	// The mirror's layout: /<vendor host>/<path>.
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		host, path, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		h, ok := hosts[host]
		if !ok {
			http.NotFound(w, r)
			return
		}
		vr := r.Clone(r.Context())
		vr.URL.Host, vr.Host, vr.URL.Path, vr.URL.RawPath = host, host, "/"+path, ""
		h.ServeHTTP(w, vr)
	})

	type list struct {
		kind builtin.Kind
		what string
		size int64
	}
	var lists []list
	if n := *phishTankRecords; n > 0 {
		// Generated as it is served, gzip-compressed: the parent holds
		// no copy, and the child reads it at the pace it parses.
		var cw countWriter
		if err := vendortest.WritePhishTankJSON(&cw, n); err != nil {
			return err
		}
		hosts["data.phishtank.com"] = &vendortest.PhishTank{Generate: n}
		lists = append(lists, list{builtin.PhishingURLDatabase, fmt.Sprintf("PhishTank online-valid.json, %d records", n), cw.n})
	}
	if n := *etOpenRules; n > 0 {
		path := filepath.Join(dir, "emerging.rules.tar.gz")
		files, size, err := writeETOpenArchive(path, n)
		if err != nil {
			return err
		}
		archive, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		hosts[vendortest.ETOpenHost] = &vendortest.ETOpen{Archive: archive}
		lists = append(lists, list{builtin.IDSRules, fmt.Sprintf("ET Open archive, %d rules in %d files, %.1f MB compressed",
			n, files, float64(len(archive))/1e6), size})
	}

	dbs := []struct{ name, dsn string }{{"SQLite", ""}}
	admin := os.Getenv("TIFEEDS_TEST_POSTGRES")
	if admin != "" {
		dbs = append(dbs, struct{ name, dsn string }{"PostgreSQL", admin})
	}
	fmt.Println("Built-in feeds on big lists (the real runner and store, one child process each; target < 150 MB RSS)")
	for _, l := range lists {
		fmt.Printf("  %s: %.1f MB uncompressed\n", l.what, float64(l.size)/1e6)
		for _, db := range dbs {
			dsn := "sqlite:" + filepath.Join(dir, "feed-"+string(l.kind)+".db")
			if db.dsn != "" {
				d, drop, err := freshPostgres(ctx, admin)
				if err != nil {
					return err
				}
				defer drop()
				dsn = d
			} else if err := removeDB(strings.TrimPrefix(dsn, "sqlite:")); err != nil {
				return err
			}
			r, err := feedChildRun(dsn, dir, srv.URL, l.kind)
			if err != nil {
				return fmt.Errorf("%s into %s: %w", l.kind, db.name, err)
			}
			fmt.Printf("    %-10s %8d IoCs in %5.1f s: %7.0f IoCs/s, %.1f MB/s; peak RSS %6.1f MB\n",
				db.name, r.Stored, r.Seconds, float64(r.Stored)/r.Seconds, float64(l.size)/1e6/r.Seconds, mb(r.MaxRSS))
		}
	}
	fmt.Println()
	return nil
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// writeETOpenArchive writes a tar.gz of n rules in ET's layout,
// rules/<name>.rules files of 10,000 rules each, file by file: the parent's
// own peak RSS stays small (see feedChild for why that matters). One rule
// in ten is an IP rule naming two addresses
// (each an IP indicator beside its RULE one), from 2001:db8::/32.
func writeETOpenArchive(path string, n int) (files int, size int64, err error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	var b strings.Builder
	flush := func(i int) {
		if err != nil {
			return
		}
		hdr := &tar.Header{Name: fmt.Sprintf("rules/emerging-bench-%03d.rules", i/10_000), Mode: 0o644,
			Size: int64(b.Len()), Typeflag: tar.TypeReg, ModTime: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)}
		if err = tw.WriteHeader(hdr); err == nil {
			_, err = io.WriteString(tw, b.String())
		}
		files++
		size += int64(b.Len())
		b.Reset()
	}
	for i := range n {
		sid := 2_000_000 + i
		if i%10 == 0 {
			fmt.Fprintf(&b, `alert ip [2001:db8:%x::%x,2001:db8:%x::%x] any -> $HOME_NET any (msg:"ET CNC Bench Tracker Reported CnC Server group %d"; reference:url,doc.emergingthreats.net/bin/view/Main/BotCC; threshold: type limit, track by_src, seconds 3600, count 1; classtype:trojan-activity; flowbits:set,ET.Evil; sid:%d; rev:%d; metadata:signature_severity Major, created_at 2026_11_02;)`+"\n",
				i>>16, i&0xffff, 0x100+i>>16, i&0xffff, i, sid, 1+i%7)
		} else {
			fmt.Fprintf(&b, `alert http $HOME_NET any -> $EXTERNAL_NET any (msg:"ET MALWARE Bench Loader %d CnC Checkin"; flow:established,to_server; http.method; content:"POST"; http.uri; content:"/gate-%d.php"; fast_pattern; http.user_agent; content:"Bench/%d"; classtype:trojan-activity; sid:%d; rev:%d; metadata:affected_product Windows_XP_Vista_7_8_10_Server_32_64_Bit, attack_target Client_Endpoint, signature_severity Minor, updated_at 2026_11_02;)`+"\n",
				i, i, i%97, sid, 1+i%5)
		}
		if (i+1)%10_000 == 0 {
			flush(i)
		}
	}
	if b.Len() > 0 {
		flush(n - 1)
	}
	if err != nil {
		return 0, 0, err
	}
	if err := tw.Close(); err != nil {
		return 0, 0, err
	}
	if err := zw.Close(); err != nil {
		return 0, 0, err
	}
	return files, size, f.Close()
}

// feedChildRun runs the feed of kind in a child process and reads its peak
// RSS.
func feedChildRun(dsn, dir, mirror string, kind builtin.Kind) (feedResult, error) {
	return childResult[feedResult](feedChildArg, dsn, dir, mirror, string(kind))
}

// openChildStore opens and migrates a child's database, with the sealing
// key its parent's run wrote in dir.
func openChildStore(ctx context.Context, dsn, dir string) (*store.Store, *store.Secrets, error) {
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, nil, err
	}
	if _, err := st.Migrate(ctx); err != nil {
		st.Close()
		return nil, nil, err
	}
	secrets, err := store.LoadSecretsFile(filepath.Join(dir, "secret.key"))
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, secrets, nil
}

// childResult runs this program again with args (a child's flag first) and
// decodes the JSON result it prints: each measured ingestion runs in a
// process of its own, so that its peak RSS is its own.
func childResult[T any](args ...string) (T, error) {
	var r T
	self, err := os.Executable()
	if err != nil {
		return r, err
	}
	cmd := exec.Command(self, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return r, fmt.Errorf("%s: %w", args[0], err)
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return r, fmt.Errorf("%s output %q: %w", args[0], out, err)
	}
	return r, nil
}

// feedChild runs the built-in feed of kind once, as serve would with
// --feed-mirror mirror: it delivers the built-in feeds, leaves only this
// one enabled, starts the runner (which runs it at once), waits for the
// run's end and prints a feedResult.
func feedChild(args []string) error {
	if len(args) != 4 {
		return errors.New("usage: " + feedChildArg + " DSN DIR MIRROR KIND")
	}
	dsn, dir, mirror, kind := args[0], args[1], args[2], args[3]
	ctx := context.Background()
	st, secrets, err := openChildStore(ctx, dsn, dir)
	if err != nil {
		return err
	}
	defer st.Close()
	sources := ingest.NewRegistry(ingest.RegistryOptions{Client: http.DefaultClient, VendorClient: vendortest.MirrorClient(mirror)})
	sources.Register(ingest.Kinds(ingest.KindOptions{})...)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner, err := ingest.New(ingest.Options{Store: st, Secrets: secrets, Sources: sources, Log: logger})
	if err != nil {
		return err
	}
	if err := runner.EnsureBuiltinFeeds(ctx); err != nil {
		return err
	}
	var feed store.Feed
	if err := st.DB.NewSelect().Model(&feed).Where("type = ? AND kind = ?", store.FeedBuiltin, kind).Scan(ctx); err != nil {
		return fmt.Errorf("the %s feed: %w", kind, err)
	}
	if _, err := st.DB.NewUpdate().Model((*store.Feed)(nil)).Set("enabled = ?", false).
		Where("type = ? AND id <> ?", store.FeedBuiltin, feed.ID).Exec(ctx); err != nil {
		return err
	}
	if err := runner.Start(ctx); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		runner.Stop(sctx)
	}()
	deadline := time.Now().Add(30 * time.Minute)
	for {
		var run store.FeedRun
		err := st.DB.NewSelect().Model(&run).Where("feed_id = ? AND ended_at IS NOT NULL", feed.ID).Limit(1).Scan(ctx)
		if err == nil {
			if run.ErrorKind != "" {
				return fmt.Errorf("the run failed: %s: %s", run.ErrorKind, run.ErrorDetail)
			}
			hwm, err := peakRSS()
			if err != nil {
				return err
			}
			return json.NewEncoder(os.Stdout).Encode(feedResult{Stored: run.Stored, Rejected: run.Rejected,
				Seconds: run.EndedAt.Sub(run.StartedAt).Seconds(), MaxRSS: hwm})
		}
		if time.Now().After(deadline) {
			return errors.New("no run ended in time")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// peakRSS returns this process's peak resident set (VmHWM). The parent's
// rusage Maxrss of a child is not used: Go starts children with vfork,
// and Linux carries the parent's peak RSS into the child's maxrss across
// exec, so a parent that once held a big list would raise every child's
// figure. VmHWM belongs to the child's own address space.
func peakRSS() (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err != nil {
				return 0, fmt.Errorf("VmHWM %q: %w", v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("no VmHWM in /proc/self/status")
}
