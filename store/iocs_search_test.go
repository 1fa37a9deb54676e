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

// The sample of the value keys outlives its process on PostgreSQL: the
// next store on the database (a restart, another instance) starts with it
// rather than taking its own, until it is old.
func TestSearchSampleKeptForTheNextStore(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	ctx := context.Background()
	openStore := func() *store.Store {
		s, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	sampled := func(s *store.Store) (time.Time, int) {
		s.StartSearchSample()
		deadline := time.Now().Add(10 * time.Second)
		for !store.HasTrigramSample(s) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		taken, rows := store.TrigramSampleOf(s)
		if taken.IsZero() {
			t.Fatal("no sample 10 s after StartSearchSample")
		}
		return taken, rows
	}
	first := openStore()
	feed := newFeed(t, first, "f")
	addKeyedDomains(t, first, feed, "host-%d.example", 300)
	taken, rows := sampled(first)
	if rows != 300 {
		t.Fatalf("the first store's sample has %d forms, want the 300 value keys", rows)
	}

	// More value keys: a sample taken now would have them.
	addKeyedDomains(t, first, feed, "other-%d.example", 100)
	if gotTaken, gotRows := sampled(openStore()); !gotTaken.Equal(taken) || gotRows != rows {
		t.Errorf("the next store's sample: taken %v with %d forms, want the kept one (%v, %d)", gotTaken, gotRows, taken, rows)
	}

	// A form's own line break breaks its trigrams as any punctuation
	// would, and the form stays one.
	forms, err := store.KeepAndReadTrigramSample(ctx, first, []string{"abc\ndef", "abc def", "abcdef"})
	if err != nil {
		t.Fatal(err)
	}
	if len(forms) != 3 || !slices.Equal(forms[0], forms[1]) || len(forms[0]) != 2 || len(forms[2]) != 4 {
		t.Errorf("forms with and without a line break kept as %v, want 3 forms, the first two of 2 trigrams alike", forms)
	}
	// Past its age, the kept sample serves a store that has none while
	// it takes a new one (the value keys locked meanwhile), then gives way.
	storetest.MustExec(t, first, "UPDATE search_trigram_sample SET taken = taken - interval '2 hours'")
	var stale time.Time
	if err := first.DB.QueryRowContext(ctx, "SELECT taken FROM search_trigram_sample").Scan(&stale); err != nil {
		t.Fatal(err)
	}
	release := storetest.HoldWrite(t, first, "LOCK TABLE ioc_value_keys IN ACCESS EXCLUSIVE MODE")
	next := openStore()
	if serving, _ := sampled(next); !serving.Equal(stale) {
		t.Errorf("while a new sample is taken, the store serves one taken %v, want the kept one, %v", serving, stale)
	}
	release()
	deadline := time.Now().Add(10 * time.Second)
	for taken, _ := store.TrigramSampleOf(next); taken.Equal(stale) && time.Now().Before(deadline); taken, _ = store.TrigramSampleOf(next) {
		time.Sleep(5 * time.Millisecond)
	}
	renewed, renewedRows := store.TrigramSampleOf(next)
	if !renewed.After(taken) || renewedRows != 400 {
		t.Errorf("past its age the kept sample gave way to: taken %v with %d forms, want a new one of 400", renewed, renewedRows)
	}
	var kept time.Time
	if err := first.DB.QueryRowContext(ctx, "SELECT taken FROM search_trigram_sample").Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if !kept.Equal(renewed) {
		t.Errorf("the kept sample was taken %v, want the new one's %v", kept, renewed)
	}
}

// A sample's forms beyond its bound in bytes are thinned evenly over the
// table's order, not cut at its first pages.
func TestSampleFormsSpreadWithinTheirBound(t *testing.T) {
	var forms []string
	for i := range 1000 {
		forms = append(forms, fmt.Sprintf("%09d", i))
	}
	if got := store.SpreadWithin(forms, 10*len(forms)); len(got) != len(forms) {
		t.Errorf("within the bound: %d forms kept of %d", len(got), len(forms))
	}
	got := store.SpreadWithin(forms, 900)
	bytes := 0
	for _, f := range got {
		bytes += len(f)
	}
	if bytes > 900 || len(got) < 90 {
		t.Errorf("bound 900: kept %d forms, %d bytes; want about 100 within 900 bytes", len(got), bytes)
	}
	if got[0] != forms[0] || got[len(got)-1] < forms[900] {
		t.Errorf("bound 900: kept %s ... %s, want them spread from the first to the last tenth", got[0], got[len(got)-1])
	}
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
		addKeyedDomains(t, s, newFeed(t, s, "f"), "host-%d.example", 50)
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

// addKeyedDomains stores n domains of feed named by format and makes their
// value keys.
func addKeyedDomains(t *testing.T, s *store.Store, feed int64, format string, n int) {
	t.Helper()
	var inds []ioc.Indicator
	for i := range n {
		inds = append(inds, dom(fmt.Sprintf(format, i), "src", 10))
	}
	apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: day, Indicators: inds})
	catchUpAll(t, s.CatchUpValueKeys, 1000)
}
