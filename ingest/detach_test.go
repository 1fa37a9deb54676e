package ingest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// within reports whether s points into row's bytes.
func within(s, row string) bool {
	if len(s) == 0 {
		return false
	}
	p, start := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(row)))
	return p >= start && p < start+uintptr(len(row))
}

// TestBatchSinkKeepsNoRowOfTheSource: indicators whose value and tags are
// substrings of a big input row (as encoding/csv hands its fields) are
// buffered without a pointer into the row, so a batch does not pin rows;
// they are stored whole.
func TestBatchSinkKeepsNoRowOfTheSource(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now()
		f := &store.Feed{Name: "TSV_detach", Type: store.FeedCustom, Category: "TSV", Enabled: true, StatusMessage: "Success",
			PollingFrequency: 24, RetentionPeriod: 30, CreatedAt: now, UpdatedAt: now}
		if _, err := s.DB.NewInsert().Model(f).Returning("id").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		sink := NewBatchSink(s, f.ID, 0, BatchOptions{BatchSize: 100, Retention: time.Hour})
		var rows []string
		for i := range 3 {
			// One string per row, its fields substrings of it: the
			// layout encoding/csv gives a record.
			row := fmt.Sprintf("host-%d.example.com,c2,malware,%s", i, strings.Repeat("evidence ", 1000))
			rows = append(rows, row)
			fields := strings.SplitN(row, ",", 4)
			if err := sink.Indicator(ctx, ioc.Indicator{Kind: ioc.Domain, Value: fields[0], Source: "rf-domain",
				Score: 90, Tags: fields[1:3]}); err != nil {
				t.Fatal(err)
			}
		}
		if len(sink.buf) != 3 {
			t.Fatalf("%d indicators buffered, want 3", len(sink.buf))
		}
		for i, ind := range sink.buf {
			for _, s := range append([]string{ind.Value}, ind.Tags...) {
				if within(s, rows[i]) {
					t.Errorf("indicator %d keeps %q inside its %d-byte input row", i, s, len(rows[i]))
				}
			}
		}
		if err := sink.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		var got []struct {
			Value string   `bun:"value"`
			Tags  []string `bun:"tags,type:json"`
		}
		if err := s.DB.NewSelect().TableExpr("iocs AS i").Join("JOIN sightings AS g ON g.ioc_id = i.id").
			ColumnExpr("i.value, g.tags").OrderExpr("i.value").Scan(ctx, &got); err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("stored %+v, want 3", got)
		}
		for i, g := range got {
			if g.Value != fmt.Sprintf("host-%d.example.com", i) || !slices.Equal(g.Tags, []string{"c2", "malware"}) {
				t.Errorf("stored %d: %+v", i, g)
			}
		}
	})
}
