package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseSizes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []int
		err  bool
	}{
		{in: "1000000,3000000,10000000", want: []int{1_000_000, 3_000_000, 10_000_000}},
		{in: " 100_000 , 300000", want: []int{100_000, 300_000}},
		{in: "300000,100000", err: true},
		{in: "100000,100000", err: true},
		{in: "0", err: true},
		{in: "-5", err: true},
		{in: "1M", err: true},
		{in: "", err: true},
	} {
		got, err := parseSizes(c.in)
		if (err != nil) != c.err || !slices.Equal(got, c.want) {
			t.Errorf("parseSizes(%q) = %v, %v; want %v, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestRunsTo(t *testing.T) {
	for _, c := range []struct {
		have, size, run int
		want            []int
	}{
		{0, 1_000_000, 500_000, []int{500_000, 500_000}},
		// From one size to the next, the last run what remains.
		{1_000_000, 3_000_000, 500_000, []int{500_000, 500_000, 500_000, 500_000}},
		{0, 250_000, 100_000, []int{100_000, 100_000, 50_000}},
		// A kept database already holding the size, or more.
		{3_000_000, 3_000_000, 500_000, nil},
		{3_200_000, 3_000_000, 500_000, nil},
		{2_900_000, 3_000_000, 500_000, []int{100_000}},
	} {
		if got := runsTo(c.have, c.size, c.run); !slices.Equal(got, c.want) {
			t.Errorf("runsTo(%d, %d, %d) = %v, want %v", c.have, c.size, c.run, got, c.want)
		}
	}
}

// TestGenerateFromDistinct checks that runs generated one after another
// hold distinct indicators, as the growth curve's runs must to add new
// IoCs, and that generate is generateFrom at 0.
func TestGenerateFromDistinct(t *testing.T) {
	dir := t.TempDir()
	seen := map[string]bool{}
	var lines []string
	for i, from := range []int{0, 700, 1400} {
		path := filepath.Join(dir, "run.tsv")
		if _, err := generateFrom(path, from, 700, 0); err != nil {
			t.Fatal(err)
		}
		got := readLines(t, path)
		if len(got) != 700 {
			t.Fatalf("run %d: %d lines, want 700", i, len(got))
		}
		for _, l := range got {
			f := strings.Split(l, "\t")
			key := f[0] + "\t" + f[1]
			if seen[key] {
				t.Fatalf("run %d: %s %s written by an earlier run", i, f[0], f[1])
			}
			seen[key] = true
		}
		lines = append(lines, got...)
	}
	whole := filepath.Join(dir, "whole.tsv")
	if _, err := generate(whole, 2100, 0); err != nil {
		t.Fatal(err)
	}
	if got := readLines(t, whole); !slices.Equal(got, lines) {
		t.Error("three runs of 700 differ from generate's 2,100 rows")
	}
}

// TestSpreadDomainRunsAddNewIoCs checks that runs with spread domains, as
// the growth curve writes between its others, hold indicators no run wrote
// before, a domain one domain row in spreadDomainEvery, the rest IPs.
func TestSpreadDomainRunsAddNewIoCs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.tsv")
	seen := map[string]bool{}
	const rows = 5 * spreadDomainEvery * 3
	for i, from := range []int{0, rows, 2 * rows, 3 * rows} {
		spread := i%2 == 1
		if _, err := generateRun(path, from, rows, 0, spread); err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, l := range readLines(t, path) {
			f := strings.Split(l, "\t")
			key := f[0] + "\t" + f[1]
			if seen[key] {
				t.Fatalf("run %d: %s %s written by an earlier run", i, f[0], f[1])
			}
			seen[key] = true
			kinds[f[0]]++
		}
		wantDomains, wantIPs := rows/5, rows/5
		if spread {
			wantDomains, wantIPs = rows/5/spreadDomainEvery, 2*rows/5-rows/5/spreadDomainEvery
		}
		if kinds["domain"] != wantDomains || kinds["ip"] != wantIPs {
			t.Errorf("run %d: %d domains and %d IPs, want %d and %d", i, kinds["domain"], kinds["ip"], wantDomains, wantIPs)
		}
	}
}

// TestBaselineGrowsWithTheStore: the scale curve's SQLite baseline adds each
// run's rows to the table it kept, counts them, and fails a load that did
// not store every row (rows an earlier run had).
func TestBaselineGrowsWithTheStore(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	b, err := newBaselineLoad(ctx, "", dir, true)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "run.tsv")
	for _, from := range []int{0, 500} {
		if _, err := generateFrom(file, from, 500, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := b.load(ctx, file, 500); err != nil {
			t.Fatalf("load of rows %d-%d: %v", from, from+499, err)
		}
	}
	if _, err := b.load(ctx, file, 500); err == nil {
		t.Errorf("a second load of the same rows: %v, want an error", err)
	}
	*scaleKeep = true
	defer func() { *scaleKeep = false }()
	kept, err := newBaselineLoad(ctx, "", dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if kept.rows != 1000 {
		t.Errorf("the kept baseline holds %d rows, want 1000", kept.rows)
	}
	// A run of a kept store after its sweep writes again values the
	// baseline holds: the baseline loads rows numbered on from its own.
	in := &scaleIngest{dir: dir, base: kept}
	for range 2 {
		if err := in.compare(result{Stored: 300, Seconds: 1}, "after a sweep"); err != nil {
			t.Fatal(err)
		}
	}
	if kept.rows != 1600 {
		t.Errorf("the baseline holds %d rows after two more runs, want 1600", kept.rows)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}
