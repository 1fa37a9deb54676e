package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/ioc"
)

// The latency run's hits are known: each hit row is covered by exactly the
// one asset it was made from, and no other row by any of the million
// assets (a row that hit unexpectedly would be delivered and fail the run).
func TestLatencyFileHitsAreKnown(t *testing.T) {
	x, err := benchIndex(benchAssetTenants)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "latency.tsv")
	const rows = latencyBatches * 2000
	hits, err := writeLatencyFile(path, rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != latencyHits {
		t.Fatalf("%d hit rows, want %d", len(hits), latencyHits)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	covered := 0
	for pos := int64(0); sc.Scan(); pos++ {
		fields := strings.Split(sc.Text(), "\t")
		var ids []int64
		x.Each(ioc.Kind(fields[0]), fields[1], func(id int64) bool {
			ids = append(ids, id)
			return true
		})
		at, hit := hits[fields[1]]
		switch {
		case hit && at != pos:
			t.Errorf("%s is at row %d, the file says %d", fields[1], pos, at)
		case hit && len(ids) != 1:
			t.Errorf("row %d (%s): covered by assets %v, want exactly one", pos, fields[1], ids)
		case !hit && len(ids) > 0:
			t.Errorf("row %d (%s): covered by assets %v, not a known hit", pos, fields[1], ids)
		}
		if hit && len(ids) == 1 {
			covered++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if covered != latencyHits {
		t.Errorf("%d hit rows covered, want %d", covered, latencyHits)
	}
}
