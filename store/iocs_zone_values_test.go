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
	"github.com/tifeeds/tifeeds/store/storetest"
)

// A page of an expiry range in value order walks each kind's values only
// between the values its zones hold (SQLite's ioc_zone_values): its pages,
// both ways, are the matching IoCs by (value, id) whether the range's
// values lie past, before or among the others', with other conditions or
// kinds no zone of the range holds, through re-sightings, a sweep, the
// cleaner and the migration; each kind walked within its values or read
// by the ids its zones list, or some kinds one way and some the other.
func TestValuePagesOfAnExpiryRangeWalkTheirZonesValues(t *testing.T) {
	withExpiryZones(t, 4)
	// Zones of 4 ids list a kind of 1 or 2 IoCs, not one of 3 or 4.
	withZoneKindListed(t, 2)
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		feed := newFeed(t, s, "values")
		batch := func(at time.Time, retention time.Duration, format string, kinds ...ioc.Kind) {
			t.Helper()
			var inds []ioc.Indicator
			for i := range 6 {
				var tags []string
				if i%3 == 0 {
					tags = []string{"third"}
				}
				for _, k := range kinds {
					v := fmt.Sprintf(format, i)
					switch k {
					case ioc.IP:
						v = fmt.Sprintf("%d.0.0.%d", len(format)*7, i)
					case ioc.MD5:
						v = fmt.Sprintf("%02x%030x", len(format)*9, i)
					case ioc.URL:
						v = "http://" + v + "/x"
					}
					inds = append(inds, ioc.Indicator{Kind: k, Value: v, Source: "src", Score: 10 * i, Tags: tags})
				}
			}
			apply(t, s, store.Batch{FeedID: feed, Now: at, Retention: retention, Indicators: inds})
		}
		// Long-lived values before, after and among the short-lived ones of
		// each kind; URLs only long-lived.
		batch(t0, 10*day, "d%02d.example", ioc.Domain, ioc.IP, ioc.MD5, ioc.URL)
		batch(t0, time.Hour, "z%02d.example", ioc.Domain, ioc.IP, ioc.MD5)
		batch(t0, 2*time.Hour, "m%02d.example.org", ioc.Domain, ioc.MD5)
		batch(t0, 10*day, "zz%02d.example", ioc.Domain, ioc.IP)
		batch(t0, 10*day, "a%02d.example.net", ioc.Domain, ioc.MD5, ioc.URL)

		at := func(d time.Duration) *time.Time { v := t0.Add(d); return &v }
		filters := []struct {
			name string
			f    store.IoCFilter
		}{
			{"expires before +1d", store.IoCFilter{ExpiresBefore: at(day)}},
			{"expires before +1d, IPs", store.IoCFilter{ExpiresBefore: at(day), Types: []ioc.Kind{ioc.IP}}},
			{"expires before +1d, URLs", store.IoCFilter{ExpiresBefore: at(day), Types: []ioc.Kind{ioc.URL}}},
			{"expires before +1d, tag", store.IoCFilter{ExpiresBefore: at(day), Tag: "third"}},
			{"expires before +1d, min score 30", store.IoCFilter{ExpiresBefore: at(day), MinScore: ptr(30)}},
			{"expires after +90m, before +1d", store.IoCFilter{ExpiresAfter: at(90 * time.Minute), ExpiresBefore: at(day)}},
			{"expires on +1h's microsecond", store.IoCFilter{ExpiresAfter: at(time.Hour - time.Microsecond), ExpiresBefore: at(time.Hour + time.Microsecond)}},
			{"expires after +2d", store.IoCFilter{ExpiresAfter: at(2 * day)}},
			{"expires after +2d, URLs", store.IoCFilter{ExpiresAfter: at(2 * day), Types: []ioc.Kind{ioc.URL}}},
		}
		sent := recordStatements(s)
		keyed := false
		readByIDs := 0
		check := func(state string) {
			t.Helper()
			checkZoneSpans(t, s, state)
			all := storedRows(t, s)
			eachPageSetting(s, func(sparse, countCap int) {
				for _, listed := range []int{0, 3, 1000} {
					*store.ListedRead = listed
					for _, c := range filters {
						for _, desc := range []bool{false, true} {
							want := idsByValue(t, all, c.f, desc)
							sent()
							for _, size := range []int{2, 3} {
								got := pagedIDs(t, s, c.f, store.IoCOrder{Field: store.IoCOrderValue, Desc: desc}, size, nil)
								if !slices.Equal(got, want) {
									t.Errorf("%s, %s, desc %v, sparse %d, cap %d, listed read %d, pages of %d:\n got %v\nwant %v",
										state, c.name, desc, sparse, countCap, listed, size, got, want)
								}
							}
							// Matches, few keys read, the keys caught up:
							// the walk of each kind's values, within the
							// zones' values on SQLite, or their ids.
							if !keyed || sparse != 1 || countCap != 3 || s.Dialect != store.SQLite || len(want) == 0 {
								continue
							}
							statements := sent()
							if !slices.ContainsFunc(statements, func(q string) bool { return strings.Contains(q, "ioc_zone_values") }) {
								t.Errorf("%s, %s, desc %v: the pages did not read the zones' values", state, c.name, desc)
							}
							byIDs := slices.ContainsFunc(statements, readsListedIDs(""))
							if byIDs && listed == 0 {
								t.Errorf("%s, %s, desc %v: the pages read listed ids with none to read", state, c.name, desc)
							}
							if byIDs {
								readByIDs++
							}
						}
					}
				}
				*store.ListedRead = 4096
			})
		}
		check("before the keys")
		catchUpAll(t, s.CatchUpKeys, 1000)
		keyed = true
		check("keys caught up")
		// Re-sighted for ten days, two short-lived domains leave the range
		// (their zones' values stay as they were).
		apply(t, s, store.Batch{FeedID: feed, Now: t0.Add(time.Minute), Retention: 10 * day,
			Indicators: []ioc.Indicator{dom("z01.example", "src", 10), dom("m04.example.org", "src", 40)}})
		check("re-sighted")
		if _, n, err := s.SweepExpired(ctx, t0.Add(90*time.Minute), 0); err != nil || n != 17 {
			t.Fatalf("swept %d IoCs (%v), want the 17 of an hour", n, err)
		}
		check("an hour's swept")
		if s.Dialect == store.SQLite {
			if n := countRows(t, s, "ioc_zone_values WHERE zone NOT IN (SELECT zone FROM ioc_expiry_zones)"); n != 0 {
				t.Errorf("%d zones' values left of zones the sweep emptied", n)
			}
		}
		cleanInPieces(t, s, 20)
		check("cleaned")
		if !zoneValuesExact(t, s) {
			t.Error("zones' values not exact after the cleaner's pass")
		}
		migrateZonesAgain(t, s)
		if n := countRows(t, s, "ioc_expiry_zones"); n != 1 || !zoneValuesExact(t, s) {
			t.Errorf("%d zones after the migrations, want 1, values exact: %v", n, zoneValuesExact(t, s))
		}
		check("migrated")
		if s.Dialect == store.SQLite && readByIDs == 0 {
			t.Error("no page read a kind by the ids its zones list")
		}
	})
}

// readsListedIDs says whether a statement reads kind (any kind when "")
// by the ids its expiry zones list (byValueOfEachKind).
func readsListedIDs(kind ioc.Kind) func(q string) bool {
	return func(q string) bool { return strings.Contains(q, "+iocs.type = '"+string(kind)) }
}

// withZoneKindListed has the zones list the ids of up to n IoCs of a kind
// for the test: set before its store's first IoC.
func withZoneKindListed(t *testing.T, n int) {
	saved := *store.ZoneKindListed
	*store.ZoneKindListed = n
	t.Cleanup(func() { *store.ZoneKindListed = saved })
}

// A kind with few matches in an expiry range, spread over its values among
// many of its own that do not match (a feed of IPs that brings a few
// domains, short-lived), is read by the ids its zones list: its pages are
// the matching IoCs by (value, id) both ways. A zone lists a kind's ids
// batch after batch up to zoneKindListed and counts them on past it, when
// the kind is walked again; a sweep leaves ids of IoCs gone, which pages
// skip, and the cleaner makes the lists exact.
func TestValuePagesReadTheFewIDsTheirZonesList(t *testing.T) {
	withExpiryZones(t, 8)
	withZoneKindListed(t, 4)
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		batch := spreadDomainsStore(t, s)
		soon := t0.Add(day)
		f := store.IoCFilter{ExpiresBefore: &soon}
		sent := recordStatements(s)
		check := func(state string, exact, domainsByIDs bool) {
			t.Helper()
			checkZoneSpans(t, s, state)
			if s.Dialect == store.SQLite && zoneValuesExact(t, s) != exact {
				t.Errorf("%s: the zones' values, counts and ids exact: %v, want %v", state, !exact, exact)
			}
			all := storedRows(t, s)
			for _, desc := range []bool{false, true} {
				want := idsByValue(t, all, f, desc)
				sent()
				for _, size := range []int{2, 3, 100} {
					got := pagedIDs(t, s, f, store.IoCOrder{Field: store.IoCOrderValue, Desc: desc}, size, nil)
					if !slices.Equal(got, want) {
						t.Errorf("%s, desc %v, pages of %d:\n got %v\nwant %v", state, desc, size, got, want)
					}
				}
				if s.Dialect != store.SQLite {
					continue
				}
				byIDs := slices.ContainsFunc(sent(), readsListedIDs(ioc.Domain))
				if byIDs != domainsByIDs {
					t.Errorf("%s, desc %v: the domains read by their listed ids: %v, want %v", state, desc, byIDs, domainsByIDs)
				}
			}
		}
		// Four domains spread among them and 21 IPs: ids 64 to 88, the
		// domains first, zone 8 (64 to 71) listing them, as many as it
		// lists.
		batch(time.Hour, []string{"h005.example.net", "h031.example.net", "h052.example.net", "h058.example.net"}, 21)
		check("four spread", true, true)
		// Two domains of two hours and then two of one in zone 11 (88 to
		// 95): its list of domains made and added to.
		batch(2*time.Hour, []string{"h044.example.net", "h047.example.net"}, 0)
		batch(time.Hour, []string{"h017.example.net"}, 0)
		batch(time.Hour, []string{"h040.example.net"}, 0)
		check("added to a zone's list", true, true)
		// The sweep of an hour's: zone 8 goes, zone 11 keeps the domains
		// of two hours and lists the two gone (two matches: more than the
		// sparse keys, which would read them by their keys).
		if _, n, err := s.SweepExpired(ctx, t0.Add(90*time.Minute), 0); err != nil || n != 27 {
			t.Fatalf("swept %d IoCs (%v), want the 27 of an hour", n, err)
		}
		check("an hour's swept", false, true)
		// Two more in zone 11: six counted, past its list.
		batch(time.Hour, []string{"h001.example.net", "h060.example.net"}, 0)
		check("past a zone's list", false, false)
		// The cleaner counts four and lists them again.
		cleanInPieces(t, s, 20)
		check("cleaned", true, true)
	})
}

// A batch that takes a zone past its list between the two reads of what
// the range's zones hold has the kind walked: the page holds the IoCs the
// list held and those the batch brought within their values.
func TestValuePagesWalkAKindWhoseListFilledMeanwhile(t *testing.T) {
	withExpiryZones(t, 8)
	withZoneKindListed(t, 4)
	storetest.EachDB(t, func(t *testing.T, s *store.Store) {
		if s.Dialect != store.SQLite {
			t.Skip("the zones' lists are SQLite's")
		}
		batch := spreadDomainsStore(t, s)
		// Zone 8 lists two short-lived domains; three more come between
		// the reads, within their values.
		batch(time.Hour, []string{"h005.example.net", "h060.example.net"}, 0)
		came := false
		store.BetweenZonesKindsReads(t, func() {
			if !came {
				came = true
				batch(time.Hour, []string{"h020.example.net", "h030.example.net", "h040.example.net"}, 0)
			}
		})
		soon := t0.Add(day)
		f := store.IoCFilter{ExpiresBefore: &soon}
		sent := recordStatements(s)
		page, err := s.IoCs(context.Background(), f, store.IoCOrder{Field: store.IoCOrderValue}, 10, "")
		if err != nil {
			t.Fatal(err)
		}
		if !came {
			t.Fatal("the page did not read the zones' lists")
		}
		var got []string
		for _, i := range page.IoCs {
			got = append(got, i.Value)
		}
		want := []string{"h005.example.net", "h020.example.net", "h030.example.net", "h040.example.net", "h060.example.net"}
		if !slices.Equal(got, want) {
			t.Errorf("page %q, want %q", got, want)
		}
		if slices.ContainsFunc(sent(), readsListedIDs(ioc.Domain)) {
			t.Error("the domains were read by the ids of a list their zone no longer keeps")
		}
	})
}

// spreadDomainsStore makes s's first 63 IoCs long-lived domains,
// h000.example.com to h062.example.com (with zones of 8 ids, zones 0 to 7
// full of them), and returns what applies a batch of domains and of ips
// IPs (10.0.<domains>.<i>) from t0, their keys caught up. Few keys read
// and few matches counted, the pages of s walk each kind (as in
// TestValuePagesOfAnExpiryRangeWalkTheirZonesValues).
func spreadDomainsStore(t *testing.T, s *store.Store) (batch func(retention time.Duration, domains []string, ips int)) {
	t.Helper()
	savedSparse := *store.SparseKeys
	*store.SparseKeys, s.IoCCountCap = 1, 3
	t.Cleanup(func() { *store.SparseKeys = savedSparse })
	feed := newFeed(t, s, "spread")
	batch = func(retention time.Duration, domains []string, ips int) {
		t.Helper()
		var inds []ioc.Indicator
		for _, d := range domains {
			inds = append(inds, dom(d, "src", 50))
		}
		for i := range ips {
			inds = append(inds, ioc.Indicator{Kind: ioc.IP, Value: fmt.Sprintf("10.0.%d.%d", len(domains), i), Source: "src", Score: 50})
		}
		apply(t, s, store.Batch{FeedID: feed, Now: t0, Retention: retention, Indicators: inds})
		catchUpAll(t, s.CatchUpKeys, 1000)
	}
	var long []string
	for i := range 63 {
		long = append(long, fmt.Sprintf("h%03d.example.com", i))
	}
	batch(10*day, long, 0)
	return batch
}
