package ingest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

const (
	crashChildEnv = "TIFEEDS_CRASH_CHILD_DSN"
	crashRows     = 300000
)

// crashChildApp is the application_name of the killed child's PostgreSQL
// connections.
const crashChildApp = "tifeeds-crash-child"

// waitGone waits until PostgreSQL has no connection of application app.
func waitGone(t *testing.T, st *store.Store, app string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := st.DB.QueryRowContext(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE application_name = ?", app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections of %s are still there 30 s after its process was killed", n, app)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// bigRows makes n distinct good ip rows.
func bigRows(n int) []byte {
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "ip\t11.%d.%d.%d\tsrc\t%d\n", i>>16, (i>>8)&255, i&255, i%101)
	}
	return b.Bytes()
}

// TestMain lets the test binary double as the process TestCrashMidRun
// kills: started with crashChildEnv set, it runs the feeds of that database
// until it is killed, instead of running the tests.
func TestMain(m *testing.M) {
	if dsn := os.Getenv(crashChildEnv); dsn != "" {
		if err := runCrashChild(dsn); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

func runCrashChild(dsn string) error {
	ctx := context.Background()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	secrets, err := store.NewSecrets([]byte(strings.Repeat("k", 32)))
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "tifeeds-crash-child")
	if err != nil {
		return err
	}
	reg := NewRegistryWithClient(loopbackClient)
	reg.Register(tsv.Kind(tsv.Options{ChunkLines: 2000, DailyLimit: 10 * crashRows, TempDir: tmp}))
	r, err := New(Options{Store: st, Secrets: secrets, Sources: reg, BatchSize: 500,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	if err := r.Start(ctx); err != nil {
		return err
	}
	select {} // until SIGKILL
}

// TestCrashMidRun kills (SIGKILL) a process in the middle of a large TSV
// run, checks that the store is consistent, and that the next run
// completes the file.
func TestCrashMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process and ingests 300,000 rows")
	}
	body := bigRows(crashRows)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(body)
	}))
	defer srv.Close()
	dsns := map[string]func(t *testing.T) string{
		"sqlite": func(t *testing.T) string {
			dsn := "sqlite:" + filepath.Join(t.TempDir(), "tifeeds.db")
			st, err := store.Open(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			if _, err := st.Migrate(context.Background()); err != nil {
				t.Fatal(err)
			}
			return dsn
		},
		"postgres": func(t *testing.T) string { return storetest.NewPostgresDSN(t) },
	}
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			dsn := dsns[name](t)
			ctx := context.Background()
			st, err := store.Open(ctx, dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			f, err := st.CreateCustomFeed(ctx, store.NewCustomFeed{Category: store.CategoryTSV, Name: "big",
				CollectionURL: srv.URL + "/big.tsv", PollingFrequency: 24, RetentionPeriod: 30})
			if err != nil {
				t.Fatal(err)
			}

			childDSN := dsn
			if name == "postgres" {
				childDSN = withAppName(dsn, crashChildApp)
			}
			cmd := exec.Command(os.Args[0], "-test.run", "^$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashChildEnv+"="+childDSN, "TMPDIR="+t.TempDir()) // the killed child cannot clean up
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until batches are being committed, then kill.
			var stored int64
			deadline := time.Now().Add(2 * time.Minute)
			for stored < 20000 {
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatalf("the child stored %d rows in 2 minutes; output:\n%s", stored, out.String())
				}
				time.Sleep(20 * time.Millisecond)
				st.DB.QueryRowContext(ctx, "SELECT COALESCE(SUM(stored), 0) FROM feed_runs WHERE feed_id = ?", f.ID).Scan(&stored)
			}
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			cmd.Wait()
			if name == "postgres" {
				// A backend of the killed child may still be committing
				// the batch it was sent: the server ends it once it
				// finds the client gone. Read the store after that.
				waitGone(t, st, crashChildApp)
			}

			runs, err := st.UnfinishedRuns(ctx)
			if err != nil || len(runs) != 1 {
				t.Fatalf("unfinished runs after the kill: %+v %v (the run ended before the kill: make the file larger)", runs, err)
			}
			checkConsistent(t, st)
			var sightings int64
			st.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM sightings").Scan(&sightings)
			if sightings != runs[0].Stored || sightings >= crashRows {
				t.Errorf("%d sightings, the run counted %d stored, of %d rows", sightings, runs[0].Stored, crashRows)
			}
			got, _ := st.Feed(ctx, f.ID)
			line, err := strconv.ParseInt(got.Cursor[len("line:"):], 10, 64)
			if err != nil || line > sightings || line == 0 {
				t.Errorf("cursor %q with %d sightings", got.Cursor, sightings)
			}
			t.Logf("killed after %d of %d rows, cursor %s", sightings, crashRows, got.Cursor)

			// The next start closes the interrupted run and completes the file.
			h := newHarnessBatch(t, st, tsv.Options{ChunkLines: 5000, DailyLimit: 10 * crashRows}, 2000)
			h.r.Wait()
			all, _ := st.FeedRuns(ctx, f.ID, 10)
			if len(all) != 2 || all[1].ErrorKind != store.MessageStopped || all[1].EndedAt == nil ||
				all[0].ErrorKind != "" || all[0].Stored != crashRows-line {
				t.Errorf("runs after the restart: %+v", all)
			}
			var iocs int
			st.DB.QueryRowContext(ctx, "SELECT COUNT(*) FROM iocs").Scan(&iocs)
			if iocs != crashRows {
				t.Errorf("%d IoCs after the resumed run, want %d", iocs, crashRows)
			}
			if got := h.feed(f.ID); got.Cursor != "" || got.StatusMessage != store.MessageSuccess {
				t.Errorf("feed after the resumed run: cursor %q, message %q", got.Cursor, got.StatusMessage)
			}
			checkConsistent(t, st)
		})
	}
}
