package store

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// sightingsInKeyOrder counts consecutive ids into place and sorts scattered
// ones: both must give the key order, (ioc_id, source), of every row once.
func TestSightingsInKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		name    string
		n       int
		idRange int64 // ids drawn from [base, base+idRange)
	}{
		{"empty", 0, 1},
		{"one", 1, 1},
		{"consecutive ids, several sources each", 500, 200},
		{"scattered ids", 300, 1 << 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const base = 1000
			var pending []pendingSighting
			seen := map[sightKey]bool{}
			for len(pending) < tc.n {
				p := pendingSighting{iocID: base + r.Int64N(tc.idRange)}
				p.source = fmt.Sprintf("src%d", r.IntN(5))
				p.value = fmt.Sprint(p.iocID)
				if seen[p.sightKey] {
					continue // dedupe leaves one row per (IoC, source)
				}
				seen[p.sightKey] = true
				pending = append(pending, p)
			}
			want := make([]*pendingSighting, len(pending))
			for i := range pending {
				want[i] = &pending[i]
			}
			got := sightingsInKeyOrder(slices.Clone(want))
			if len(got) != len(pending) {
				t.Fatalf("%d rows, want %d", len(got), len(pending))
			}
			slices.SortFunc(want, func(x, y *pendingSighting) int {
				return cmp.Or(cmp.Compare(x.iocID, y.iocID), strings.Compare(x.source, y.source))
			})
			if !slices.Equal(got, want) {
				t.Errorf("rows not in (ioc_id, source) order, or not each once")
			}
		})
	}
}
