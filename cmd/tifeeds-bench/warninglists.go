package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"strconv"

	"github.com/tifeeds/tifeeds/allowlist"
)

// warninglistEnv, set for an ingest child to a number N, makes it ingest
// through the built-in warninglists with their default actions and one own
// list of N entries that drops.
const warninglistEnv = "TIFEEDS_BENCH_WARNINGLIST"

// benchWarninglistEntries is the own list measured (issue 27: with the
// default set and 1,000,000 own entries, ≥ 0.9 of the rate without lists
// and at most 100 MB more memory).
const benchWarninglistEntries = 1_000_000

// childWarninglists returns the set an ingest child applies when
// warninglistEnv is set: the own list is parsed from its text, as a reload
// parses what the store holds.
func childWarninglists(v string) (allowlist.Matcher, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", warninglistEnv, v, err)
	}
	// As ingest's loadOwn parses own lists.
	defer debug.SetGCPercent(debug.SetGCPercent(20))
	p, err := allowlist.Parse("bench-own", benchOwnList(n))
	if err != nil {
		return nil, err
	}
	p.List.Default = allowlist.Drop
	x := allowlist.NewIndex([]*allowlist.Parsed{p})
	p = nil
	debug.FreeOSMemory()
	return allowlist.NewSetWith(nil, x, nil), nil
}

// benchOwnList is n entries of the kinds an own list holds, none covering
// the generated rows but of their shapes (see benchEntries): addresses and
// ranges beside the rows' 11.0.0.0/8, names under their example.com, and
// hashes.
func benchOwnList(n int) []byte {
	b := bytes.NewBuffer(make([]byte, 0, n*32))
	for i := range n {
		switch i % 4 {
		case 0:
			fmt.Fprintf(b, "12.%d.%d.%d\n", i>>16&255, i>>8&255, i&255)
		case 1:
			fmt.Fprintf(b, "13.%d.%d.0/24\n", i>>16&255, i>>8&255)
		case 2:
			fmt.Fprintf(b, "corp-%d.example.com\n", i)
		default:
			fmt.Fprintf(b, "%064x\n", i)
		}
	}
	return b.Bytes()
}

// benchWarninglists measures TSV ingestion into SQLite without any list
// and with the default warninglists and an own list of 1,000,000 entries,
// interleaved: the rate and the peak RSS of each.
func benchWarninglists(ctx context.Context, dir, file string, rows, batch, runs int) error {
	var without, with, rssWithout, rssWith []float64
	db := "sqlite:" + filepath.Join(dir, "warn.db")
	for range runs {
		a, err := ingestChildEnv(db, file, batch, nil)
		if err != nil {
			return err
		}
		b, err := ingestChildEnv(db, file, batch, []string{warninglistEnv + "=" + strconv.Itoa(benchWarninglistEntries)})
		if err != nil {
			return err
		}
		without, with = append(without, float64(a.Stored)/a.Seconds), append(with, float64(b.Stored)/b.Seconds)
		rssWithout, rssWith = append(rssWithout, float64(a.MaxRSS)), append(rssWith, float64(b.MaxRSS))
		fmt.Printf("  warninglists run: without %.0f IoCs/s (RSS %.0f MB), with %.0f IoCs/s (RSS %.0f MB)\n",
			float64(a.Stored)/a.Seconds, float64(a.MaxRSS)/1e6, float64(b.Stored)/b.Seconds, float64(b.MaxRSS)/1e6)
	}
	mw, mb := median(without), median(with)
	fmt.Printf("Warninglists (SQLite, %d rows): without lists %.0f IoCs/s, with the default set + %d own entries %.0f IoCs/s: %.3f of the rate (target ≥ 0.90); peak RSS %+.0f MB (target ≤ 100)\n\n",
		rows, mw, benchWarninglistEntries, mb, mb/mw, (median(rssWith)-median(rssWithout))/1e6)
	return nil
}
