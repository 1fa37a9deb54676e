package ingest

import (
	"context"
	"database/sql"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// logWatch is a slog handler that hands over the messages it is given.
type logWatch struct{ msgs chan string }

func (w logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (w logWatch) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w logWatch) WithGroup(string) slog.Handler            { return w }
func (w logWatch) Handle(_ context.Context, r slog.Record) error {
	select {
	case w.msgs <- r.Message:
	default:
	}
	return nil
}

// waitFor waits for a logged message starting with prefix.
func (w logWatch) waitFor(t *testing.T, prefix string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case m := <-w.msgs:
			if strings.HasPrefix(m, prefix) {
				return
			}
		case <-deadline:
			t.Fatalf("never logged %q", prefix)
		}
	}
}

// databaseOutage makes the store's database refuse writes until the
// returned func lifts it: on SQLite the store's one connection turns
// query-only; PostgreSQL stops accepting connections to the database and
// the store's are cut.
func databaseOutage(t *testing.T, st *store.Store) (lift func()) {
	t.Helper()
	ctx := context.Background()
	if st.Dialect == store.SQLite {
		storetest.MustExec(t, st, "PRAGMA query_only = ON")
		return func() { storetest.MustExec(t, st, "PRAGMA query_only = OFF") }
	}
	var name string
	if err := st.DB.QueryRowContext(ctx, "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("pgx", storetest.PostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := admin.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`ALTER DATABASE "` + name + `" ALLOW_CONNECTIONS false`)
	exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1`, name)
	lifted := false
	lift = func() {
		if !lifted {
			lifted = true
			exec(`ALTER DATABASE "` + name + `" ALLOW_CONNECTIONS true`)
		}
	}
	t.Cleanup(lift)
	return lift
}

// TestRunEndRecordedAfterDatabaseOutage: the database fails during a run, so
// the run's end cannot be recorded; once the database is back, the end is
// recorded without a restart, the feed leaves Initializing, and the feed
// runs again.
func TestRunEndRecordedAfterDatabaseOutage(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		logs := logWatch{msgs: make(chan string, 64)}
		h := newHarnessWith(t, st, tsv.Options{}, func(o *Options) {
			o.Log, o.RecordRetry = slog.New(logs), 20*time.Millisecond
		})
		srv := newTSVServer(t, ipRows(1, 10))
		gate, started := make(chan struct{}), make(chan struct{}, 1)
		srv.set(func(s *tsvServer) { s.gate, s.started = gate, started })
		f := h.create(srv.URL+"/feed.tsv", nil)
		<-started
		if got := h.feed(f.ID); got.StatusMessage != store.MessageInitializing {
			t.Fatalf("feed during its first run: %q", got.StatusMessage)
		}

		lift := databaseOutage(t, st)
		srv.set(func(s *tsvServer) { s.gate, s.started = nil, nil })
		close(gate)
		logs.waitFor(t, "Unable to record the end of a run")
		if !h.r.Running(f.ID) {
			t.Error("the feed is no longer running here while its run is not recorded as ended")
		}
		lift()

		done := make(chan struct{})
		go func() { h.r.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatal("the run never ended after the database came back")
		}
		run := h.lastRun(f.ID)
		if run.EndedAt == nil || run.ErrorKind == "" {
			t.Fatalf("run after the outage = %+v, want ended, failed", run)
		}
		got := h.feed(f.ID)
		if got.StatusMessage == store.MessageInitializing || got.LastRunAt == nil {
			t.Errorf("feed after the outage: %q, last run %v", got.StatusMessage, got.LastRunAt)
		}
		if h.count(`SELECT COUNT(*) FROM feed_runs WHERE ended_at IS NULL`) != 0 {
			t.Error("a run is left open")
		}

		// No restart needed: the next run stores the file.
		if run := h.runNow(f.ID); run.ErrorKind != "" || run.Stored != 10 {
			t.Errorf("run after recovery = %+v", run)
		}
		if got := h.feed(f.ID); got.StatusMessage != store.MessageSuccess {
			t.Errorf("feed after the next run: %q", got.StatusMessage)
		}
		checkConsistent(t, st)
	})
}
