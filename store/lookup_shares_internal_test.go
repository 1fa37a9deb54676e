package store

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tifeeds/tifeeds/ioc"
)

// A lookup's shares hold every value exactly once, in parts of one kind,
// no share more than its fair part, and no more statements than a share
// of each kind's values needs.
func TestLookupSharesCutEveryValueOnce(t *testing.T) {
	values := func(kind ioc.Kind, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s-%d", kind, i)
		}
		return out
	}
	for _, counts := range []map[ioc.Kind]int{
		{ioc.IP: 10_000},
		{ioc.IP: 1, ioc.Domain: 1},
		{ioc.IP: 5_000, ioc.Domain: 5_000},
		{ioc.IP: 3, ioc.Domain: 9_000, ioc.URL: 997, ioc.MD5: 1, ioc.SHA256: 2_000},
		{ioc.SHA1: 7, ioc.SHA256: 7, ioc.MD5: 7},
	} {
		byType := map[ioc.Kind][]string{}
		n := 0
		for kind, c := range counts {
			byType[kind] = values(kind, c)
			n += c
		}
		for workers := 1; workers <= 4; workers++ {
			shares := lookupShares(byType, workers)
			name := fmt.Sprintf("%v in %d", counts, workers)
			if len(shares) > workers {
				t.Errorf("%s: %d shares", name, len(shares))
			}
			fair := (n + workers - 1) / workers
			got := map[ioc.Kind][]string{}
			statements := 0
			for i, share := range shares {
				size := 0
				for _, p := range share {
					if len(p.values) == 0 {
						t.Errorf("%s: share %d has an empty part of %s", name, i, p.kind)
					}
					size += len(p.values)
					got[p.kind] = append(got[p.kind], p.values...)
				}
				if size > fair || (size < fair && i < len(shares)-1) {
					t.Errorf("%s: share %d holds %d values, want %d", name, i, size, fair)
				}
				statements += len(share)
			}
			if statements > len(counts)+workers-1 {
				t.Errorf("%s: %d statements, want at most %d", name, statements, len(counts)+workers-1)
			}
			for kind, want := range byType {
				if !slices.Equal(got[kind], want) {
					t.Errorf("%s: %s's values read as %d, want each of %d once", name, kind, len(got[kind]), len(want))
				}
			}
			if len(got) != len(byType) {
				t.Errorf("%s: kinds %v, want %v", name, got, counts)
			}
		}
	}
}
