package store_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/migrations"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// punctuatedURLs are values whose trigram forms collide: '-' and '_' are
// both 'z', '.' is 'q', and case is folded.
var punctuatedURLs = []string{
	"http://a-b.example/p?x=1&y=%41",
	"http://a_b.example/p?x=1&y=%41",
	"http://aqb.example/P_Q",
	`http://c.example/back\slash~(1)`,
	"http://c.example/backzslash",
}

// A search finds exactly the IoCs whose value contains it, ignoring case,
// whatever punctuation, wildcard or escape character it holds: before the
// key indexer made the value keys, and after, when PostgreSQL's keys hold
// the values' trigram form and tell "a-b" from "a_b" only by the IoC.
func TestSearchTellsPunctuationApart(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := newFeed(t, s, "f")
		var inds []ioc.Indicator
		for _, v := range punctuatedURLs {
			inds = append(inds, ioc.Indicator{Kind: ioc.URL, Value: v, Source: "s", Score: 10})
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: inds})
		searches := []string{"a-b.", "A_B", "a.b", "aqb.", "b.example/p?x=1&y=%41", "%41", "p_q", "P-Q", `k\s`, "kzs", "~(1)", "example", "zzz", "x=1"}
		check := func(when string) {
			t.Helper()
			for _, search := range searches {
				var want []string
				for _, v := range punctuatedURLs {
					if strings.Contains(strings.ToLower(v), strings.ToLower(search)) {
						want = append(want, v)
					}
				}
				var got []string
				for _, i := range pagedIoCs(t, s, store.IoCFilter{Search: search}, store.IoCOrder{}, 2, nil) {
					got = append(got, i.Value)
				}
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("%s: search %q found %q, want %q", when, search, got, want)
				}
			}
		}
		check("before the value keys")
		catchUpAll(t, s.CatchUpKeys, 100)
		if n := countRows(t, s, "ioc_value_keys"); n != len(punctuatedURLs) {
			t.Fatalf("%d value keys after catching up, want %d", n, len(punctuatedURLs))
		}
		check("after the value keys")
		// On so small a sample every trigram is common: the searches
		// leave out all they can.
		if err := store.SampleTrigrams(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		check("with a sample of the value keys")
	})
}

// The Go form of a search is the form PostgreSQL's expression gives the
// values: for every ASCII character and some that are not.
func TestValueKeyFormIsPostgreSQLs(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		if s.Dialect != store.Postgres {
			t.Skip("SQLite's value keys are the values")
		}
		if len(migrations.ValueKeyPunctuation) != len(migrations.ValueKeyLetters) {
			t.Fatalf("%d punctuation characters for %d letters", len(migrations.ValueKeyPunctuation), len(migrations.ValueKeyLetters))
		}
		var all strings.Builder
		for c := rune(1); c < 128; c++ {
			all.WriteRune(c)
		}
		all.WriteString("éÅ‐．／Ω")
		var form string
		if err := s.DB.NewRaw("SELECT "+migrations.ValueKeyForm("v")+" FROM (SELECT ? AS v) AS t", all.String()).
			Scan(context.Background(), &form); err != nil {
			t.Fatal(err)
		}
		if got := store.ValueKeyForm(all.String()); got != form {
			t.Errorf("Go's form %q, PostgreSQL's %q", got, form)
		}
		for _, r := range form {
			if r < 128 && !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r < ' ' || r == 127) {
				t.Errorf("the form keeps punctuation %q", r)
			}
		}
	})
}

// A search leaves the most common trigrams out of its index condition when
// the others, together, find no more sampled values; and keeps them all
// when leaving one out would find more, or when there is nothing to choose.
func TestSearchChoosesItsTrigramsBySample(t *testing.T) {
	var hosts []string
	for i := range 1000 {
		hosts = append(hosts, fmt.Sprintf("hostz%dqexamplezcom", i), fmt.Sprintf("%032x", i*7919))
	}
	kept := store.IndexTrigrams(hosts, "ostz4242")
	if len(kept) < 3 || slices.Contains(kept, "ost") || slices.Contains(kept, "stz") {
		t.Errorf("ostz4242 among host names keeps %q: want at least 3, without ost and stz", kept)
	}
	for _, tri := range kept {
		if !strings.Contains("ostz4242", tri) {
			t.Errorf("ostz4242 keeps %q, not one of its trigrams", tri)
		}
	}
	// Without xab the other three would find the 200 yabcde values.
	var mixed []string
	for i := range 400 {
		mixed = append(mixed, fmt.Sprintf("xab%d", i))
	}
	for i := range 200 {
		mixed = append(mixed, fmt.Sprintf("yabcde%d", i))
	}
	for i := range 10 {
		mixed = append(mixed, fmt.Sprintf("xabcde%d", i))
	}
	if kept := store.IndexTrigrams(mixed, "xabcde"); kept != nil {
		t.Errorf("xabcde keeps %q, want all its trigrams", kept)
	}
	for _, c := range []struct {
		sample []string
		form   string
	}{{nil, "ostz4242"}, {hosts, "ostz"}, {hosts, "hostzé4242"}, {hosts, "hostz4242"[:5]},
		{hosts, "hostz12345678qexamplezcomhostz87654321qexamplezcom"}} {
		if kept := store.IndexTrigrams(c.sample, c.form); kept != nil {
			t.Errorf("%q on a sample of %d keeps %q, want all its trigrams", c.form, len(c.sample), kept)
		}
	}
}

// StartSearchSample, which serve calls before its first request, takes the
// sample searches choose their trigrams by in the background, on
// PostgreSQL; SQLite has none to take.
func TestStartSearchSampleTakesOne(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		feed := newFeed(t, s, "f")
		var inds []ioc.Indicator
		for i := range 50 {
			inds = append(inds, dom(fmt.Sprintf("host-%d.example", i), "src", 10))
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: inds})
		catchUpAll(t, s.CatchUpValueKeys, 1000)
		if store.HasTrigramSample(s) {
			t.Fatal("a sample before any was started")
		}
		s.StartSearchSample()
		deadline := time.Now().Add(10 * time.Second)
		for !store.HasTrigramSample(s) && s.Dialect == store.Postgres && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got, want := store.HasTrigramSample(s), s.Dialect == store.Postgres; got != want {
			t.Errorf("a sample after StartSearchSample: %v, want %v", got, want)
		}
	})
}
