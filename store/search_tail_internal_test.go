package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The tail's ids and text stay together through its reads, the moves of
// value_id that drop its start (the text copied out past half) and starts
// over: each search finds exactly the IoCs after value_id, up to the
// tail's end, whose value holds it in any ASCII case.
func TestValueTailFindsWhatItHolds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tail valueTail
	values := map[int64]string{}
	var next, valueID int64 = 1, 0
	words := []string{"Host", "ost-42", "EXAMPLE", "été", "x", "4242", "a.b"}
	for step := range 400 {
		switch op := rng.IntN(10); {
		case op < 5: // a read of new IoCs, some ids skipped
			tail.advance(valueID)
			generation, hi := tail.generation, tail.hi
			var ids []int64
			var text []byte
			var ends []int
			for range 1 + rng.IntN(20) {
				next += 1 + int64(rng.IntN(3))
				var v strings.Builder
				for range 1 + rng.IntN(4) {
					v.WriteString(words[rng.IntN(len(words))])
				}
				values[next] = v.String()
				ids = append(ids, next)
				text = append(appendLowerASCII(text, v.String()), 0)
				ends = append(ends, len(text)-1)
			}
			tail.add(generation, hi, ids, text, ends)
			if rng.IntN(3) == 0 {
				// A second fill that read the same IoCs: too late.
				tail.add(generation, hi, ids, text, ends)
			}
		case op < 8: // value_id moves into the tail
			if next > valueID {
				valueID += 1 + rng.Int64N(next-valueID)
			}
		case op < 9: // past it: the tail starts over
			next += 5
			valueID = next
		}
		for _, needle := range []string{"ost-42", "host", "example", "été", "42h", "xx"} {
			hi, got, dense := tail.tailSearch(valueID, needle, 1000)
			if dense {
				t.Fatalf("step %d: %q dense", step, needle)
			}
			var want []int64
			for id, v := range values {
				if id > valueID && id <= hi && strings.Contains(strings.ToLower(v), needle) {
					want = append(want, id)
				}
			}
			slices.Sort(want)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("step %d: %q in (%d, %d] found %v, want %v", step, needle, valueID, hi, got, want)
			}
		}
	}
	if tail.generation < 2 || tail.textFrom == 0 && len(tail.ids) == 0 {
		t.Errorf("the steps never started the tail over or never kept part of it (generation %d)", tail.generation)
	}
}
