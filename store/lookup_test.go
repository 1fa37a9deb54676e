package store_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// TestIoCsByKeysReadsAsTheModel checks that the lookup's own scan reads
// every column as bun's model scanner does (times to the microsecond, tags
// with JSON escapes), tags of none or NULL as an empty list, and finds only
// the keys stored, a value under another kind included.
func TestIoCsByKeysReadsAsTheModel(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		at := time.Date(2026, 11, 24, 10, 0, 0, 123456000, time.UTC)
		for _, row := range []store.IoC{
			{Type: ioc.IP, Value: "203.0.113.7", Score: 90, Tags: []string{"emerging_threat", `quote"\<&>é`}},
			{Type: ioc.Domain, Value: "evil.example", Score: 40, Tags: []string{}},
			{Type: ioc.Domain, Value: "no-tags.example", Score: 10, Tags: []string{}},
			{Type: ioc.MD5, Value: "d41d8cd98f00b204e9800998ecf8427e", Score: 70, Tags: []string{"malware"}},
		} {
			row.FirstSeen, row.LastSeen, row.ExpiresAt = at, at.Add(time.Hour), at.Add(24*time.Hour)
			if _, err := st.DB.NewInsert().Model(&row).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := st.DB.NewUpdate().Table("iocs").Set("tags = NULL").Where("value = ?", "no-tags.example").Exec(ctx); err != nil {
			t.Fatal(err)
		}
		// Every column, as the lookup read them through bun before.
		var stored []store.IoC
		if err := st.DB.NewRaw("SELECT id, type, value, score, tags, first_seen, last_seen, expires_at, changed_at FROM iocs").Scan(ctx, &stored); err != nil {
			t.Fatal(err)
		}
		want := map[store.IoCKey]store.IoC{}
		for _, c := range stored {
			if c.Tags == nil {
				c.Tags = []string{}
			}
			want[store.IoCKey{Type: c.Type, Value: c.Value}] = c
		}
		keys := []store.IoCKey{
			{Type: ioc.IP, Value: "203.0.113.7"}, {Type: ioc.Domain, Value: "evil.example"},
			{Type: ioc.Domain, Value: "no-tags.example"}, {Type: ioc.MD5, Value: "d41d8cd98f00b204e9800998ecf8427e"},
			{Type: ioc.IP, Value: "203.0.113.7"},     // twice
			{Type: ioc.IP, Value: "198.51.100.1"},    // not stored
			{Type: ioc.Domain, Value: "203.0.113.7"}, // stored under another kind
		}
		got, err := st.IoCsByKeys(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("found %d IoCs, want %d", len(got), len(want))
		}
		for k, w := range want {
			g, ok := got[k]
			if !ok {
				t.Errorf("%v not found", k)
				continue
			}
			if !reflect.DeepEqual(*g, w) {
				t.Errorf("%v read as\n%+v\nwant\n%+v", k, *g, w)
			}
		}
		if c := got[store.IoCKey{Type: ioc.IP, Value: "203.0.113.7"}]; c != nil && !c.FirstSeen.Equal(at) {
			t.Errorf("first seen %v, want %v", c.FirstSeen, at)
		}
	})
}

// TestIoCsByKeysSharedOutFindsEach: a lookup of thousands of values of
// several kinds, shared out among four cores' connections, finds each stored
// key once with its own IoC, none of the absent, and fails whole when its
// context is cancelled.
func TestIoCsByKeysSharedOutFindsEach(t *testing.T) {
	// Four cores' shares, wherever the test runs: how many there are is a
	// matter of speed, what they find is not.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, st, "TSV_lookup")
		var inds []ioc.Indicator
		var keys []store.IoCKey
		for i := range 1500 {
			stored := []ioc.Indicator{
				{Kind: ioc.Domain, Value: fmt.Sprintf("host-%d.example", i)},
				{Kind: ioc.IP, Value: fmt.Sprintf("10.%d.%d.1", i/256, i%256)},
			}
			if i%3 == 0 {
				stored = append(stored, ioc.Indicator{Kind: ioc.MD5, Value: fmt.Sprintf("%032x", i)})
			}
			for _, ind := range stored {
				ind.Source, ind.Score = "list", 50
				inds = append(inds, ind)
				keys = append(keys, store.IoCKey{Type: ind.Kind, Value: ind.Value})
			}
			// Absent: another host, the stored domain's value as a URL.
			keys = append(keys, store.IoCKey{Type: ioc.Domain, Value: fmt.Sprintf("absent-%d.example", i)},
				store.IoCKey{Type: ioc.URL, Value: fmt.Sprintf("host-%d.example", i)})
		}
		apply(t, st, store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: inds})
		keys = append(keys, keys[:500]...) // asked twice
		var ids []struct {
			ID    int64
			Type  ioc.Kind
			Value string
		}
		if err := st.DB.NewRaw("SELECT id, type, value FROM iocs").Scan(ctx, &ids); err != nil {
			t.Fatal(err)
		}
		want := map[store.IoCKey]int64{}
		for _, r := range ids {
			want[store.IoCKey{Type: r.Type, Value: r.Value}] = r.ID
		}
		if len(want) != len(inds) {
			t.Fatalf("%d IoCs stored, want %d", len(want), len(inds))
		}
		got, err := st.IoCsByKeys(ctx, keys)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("found %d IoCs, want %d", len(got), len(want))
		}
		for k, id := range want {
			c, ok := got[k]
			switch {
			case !ok:
				t.Errorf("%v not found", k)
			case c.ID != id || c.Type != k.Type || c.Value != k.Value:
				t.Errorf("%v found as IoC %d %s %q, want IoC %d", k, c.ID, c.Type, c.Value, id)
			}
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if got, err := st.IoCsByKeys(cancelled, keys); !errors.Is(err, context.Canceled) || got != nil {
			t.Errorf("cancelled lookup: %d found, error %v; want none and context.Canceled", len(got), err)
		}
	})
}
