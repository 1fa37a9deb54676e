package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/tifeeds/tifeeds/store"
)

// exportQueries are the rows each export reads, as the store streams them:
// an IoC's sources are its inline sighting's or those of its rows.
func exportQueries(d store.Dialect) map[string]string {
	rows := `(SELECT group_concat(x, ';') FROM (SELECT f.name || '/' || sg.source AS x
	FROM sighting_rows sg JOIN feeds f ON f.id = sg.feed_id WHERE sg.ioc_id = iocs.id
	ORDER BY sg.score DESC, sg.feed_id, sg.source))`
	if d == store.Postgres {
		rows = `(SELECT string_agg(f.name || '/' || sg.source, ';' ORDER BY sg.score DESC, sg.feed_id, sg.source)
	FROM sighting_rows sg JOIN feeds f ON f.id = sg.feed_id WHERE sg.ioc_id = iocs.id)`
	}
	sources := `CASE WHEN iocs.feed_id IS NULL THEN ` + rows + `
	ELSE (SELECT f.name || '/' || iocs.source FROM feeds f WHERE f.id = iocs.feed_id) END`
	return map[string]string{
		"txt": "SELECT type, value FROM iocs ORDER BY id",
		"csv": "SELECT id, type, value, score, tags, first_seen, last_seen, expires_at, " + sources +
			" AS sources FROM iocs ORDER BY id",
	}
}

// cliQuery runs query in the database's own client, its output discarded:
// sqlite3 for SQLite, psql's \copy (COPY ... TO STDOUT) for PostgreSQL.
func (b *readBench) cliQuery(ctx context.Context, query string) error {
	query = strings.Join(strings.Fields(query), " ")
	var cmd *exec.Cmd
	if b.st.Dialect == store.Postgres {
		cmd = exec.CommandContext(ctx, "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", b.dsn,
			"-c", `\copy (`+query+`) to '/dev/null'`)
	} else {
		cmd = exec.CommandContext(ctx, "sqlite3", "-readonly", strings.TrimPrefix(b.dsn, "sqlite:"), query)
		cmd.Stdout = io.Discard
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v: %s", cmd.Path, err, stderr.String())
	}
	return nil
}

func (b *readBench) exports(ctx context.Context) error {
	if _, err := exec.LookPath("psql"); err != nil && b.st.Dialect == store.Postgres {
		return errors.New("the psql command is needed for the export baseline: apt-get install postgresql-client")
	}
	queries := exportQueries(b.st.Dialect)
	for _, format := range []string{"txt", "csv"} {
		var s sideBySide
		var size int64
		for range b.runs {
			base, err := timed(func() error { return b.cliQuery(ctx, queries[format]) })
			if err != nil {
				return err
			}
			ours, err := timed(func() (err error) {
				size, err = b.get(ctx, b.client, b.url, "/api/export/iocs."+format, nil)
				return err
			})
			if err != nil {
				return err
			}
			s.add(ours, base)
		}
		fmt.Printf("  export iocs.%-4s %6.2f s (%.0f MB) vs %-8s %6.2f s   ratio %5.2f (target >= 0.25; each run: %s)\n",
			format, median(s.ours), float64(size)/1e6, cliName(b.st.Dialect), median(s.base), s.ratio(), s.each())
	}
	return nil
}

func cliName(d store.Dialect) string {
	if d == store.Postgres {
		return `\copy`
	}
	return "sqlite3"
}
