package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/ingest/source/sourcetest"
	"github.com/tifeeds/tifeeds/ingest/tsv"
)

// The ingest children's rare tag goes on every hundredth indicator, beside
// the TSV's own, and on no other: tsv.Read hands every indicator the same
// tags slice, which the tagging must not write into.
func TestRareTaggingTagsEveryHundredth(t *testing.T) {
	var rows strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&rows, "domain\thost-%d.example.com\tsrc\t50\n", i)
	}
	to := &sourcetest.Collector{}
	if _, err := tsv.Read(context.Background(), strings.NewReader(rows.String()), &rareTagging{Sink: to}); err != nil {
		t.Fatal(err)
	}
	if len(to.Indicators) != 1000 {
		t.Fatalf("%d indicators, want 1000", len(to.Indicators))
	}
	for i, ind := range to.Indicators {
		want := []string{tsv.Tag}
		if i%100 == 3 {
			want = append(want, rareTag)
		}
		if !slices.Equal(ind.Tags, want) {
			t.Errorf("indicator %d tagged %q, want %q", i, ind.Tags, want)
		}
	}
}
