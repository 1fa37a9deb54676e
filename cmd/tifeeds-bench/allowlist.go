package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tifeeds/tifeeds/allowlist"
)

// allowlistEnv, set for an ingest child to a number N, makes it ingest
// through the built-in lists and N user entries.
const allowlistEnv = "TIFEEDS_BENCH_ALLOWLIST"

// benchAllowlistEntries is the size of the user allowlist measured (issue
// 16: at most a 10 % drop with the built-in lists and 10,000 entries).
const benchAllowlistEntries = 10000

// childAllowlist returns the allowlist an ingest child applies: nil unless
// allowlistEnv is set.
func childAllowlist() (allowlist.Matcher, error) {
	if v := os.Getenv(warninglistEnv); v != "" {
		return childWarninglists(v)
	}
	v := os.Getenv(allowlistEnv)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", allowlistEnv, v, err)
	}
	return allowlist.NewSet(benchEntries(n)), nil
}

// benchEntries makes n user entries of the four kinds that cover none of
// the generated rows but share their shapes, so each lookup does its full
// work: domains under the rows' example.com (a label walk that probes
// every parent), URL prefixes on the rows' own site-N.example.org hosts (a
// prefix comparison), and addresses and ranges beside the rows' 11.0.0.0/8.
func benchEntries(n int) []allowlist.Entry {
	out := make([]allowlist.Entry, 0, n)
	for i := 0; len(out) < n; i++ {
		var raw string
		switch i % 4 {
		case 0:
			raw = fmt.Sprintf("12.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		case 1:
			raw = fmt.Sprintf("13.%d.%d.0/24", i>>16&255, i>>8&255)
		case 2:
			raw = fmt.Sprintf("corp-%d.example.com", i)
		default:
			raw = fmt.Sprintf("http://site-%d.example.org/safe/", i%10007)
		}
		kind, value, err := allowlist.ParseEntry(raw)
		if err != nil {
			panic(err)
		}
		out = append(out, allowlist.Entry{ID: int64(i + 1), Kind: kind, Value: value})
	}
	return out
}

// benchAllowlist measures TSV ingestion into SQLite without the allowlist
// and with the built-in lists and 10,000 user entries, interleaved.
func benchAllowlist(ctx context.Context, dir, file string, rows, batch, runs int) error {
	var without, with []float64
	db := "sqlite:" + filepath.Join(dir, "allow.db")
	for range runs {
		a, err := ingestChildEnv(db, file, batch, nil)
		if err != nil {
			return err
		}
		b, err := ingestChildEnv(db, file, batch, []string{allowlistEnv + "=" + strconv.Itoa(benchAllowlistEntries)})
		if err != nil {
			return err
		}
		without, with = append(without, float64(a.Stored)/a.Seconds), append(with, float64(b.Stored)/b.Seconds)
		fmt.Printf("  allowlist run: without %.0f IoCs/s, with %.0f IoCs/s\n", float64(a.Stored)/a.Seconds, float64(b.Stored)/b.Seconds)
	}
	mw, mb := median(without), median(with)
	fmt.Printf("Allowlist (SQLite, %d rows): without %.0f IoCs/s, with built-in lists + %d user entries %.0f IoCs/s: %.3f of the rate (target ≥ 0.90)\n\n",
		rows, mw, benchAllowlistEntries, mb, mb/mw)
	return nil
}
