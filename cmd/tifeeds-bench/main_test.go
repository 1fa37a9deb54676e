package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ingest/tsv"
	"github.com/tifeeds/tifeeds/ioc"
)

// collected keeps what reaches a sink.
type collected struct {
	source.SinkBase
	inds []ioc.Indicator
}

func (c *collected) Indicator(_ context.Context, ind ioc.Indicator) error {
	c.inds = append(c.inds, ind)
	return nil
}
func (c *collected) Rejected(int64, string)                   {}
func (c *collected) Checkpoint(context.Context, string) error { return nil }

// The ingest children's rare tag goes on every hundredth indicator, beside
// the TSV's own, and on no other: tsv.Read hands every indicator the same
// tags slice, which the tagging must not write into.
func TestRareTaggingTagsEveryHundredth(t *testing.T) {
	var rows strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&rows, "domain\thost-%d.example.com\tsrc\t50\n", i)
	}
	to := &collected{}
	if _, err := tsv.Read(context.Background(), strings.NewReader(rows.String()), &rareTagging{Sink: to}); err != nil {
		t.Fatal(err)
	}
	if len(to.inds) != 1000 {
		t.Fatalf("%d indicators, want 1000", len(to.inds))
	}
	for i, ind := range to.inds {
		want := []string{tsv.Tag}
		if i%100 == 3 {
			want = append(want, rareTag)
		}
		if !slices.Equal(ind.Tags, want) {
			t.Errorf("indicator %d tagged %q, want %q", i, ind.Tags, want)
		}
	}
}
