package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/tsv"
)

// pages times the first page of iocs (100 rows, totalCount) in every order
// and under each single filter.
func (b *readBench) pages(ctx context.Context) (missed []string, err error) {
	return b.pagesWhile(ctx, nil, false)
}

// pagesWhile is pages measured over and over while busy reports true (the
// rounds of b.runs at least), so that a page is timed all through an
// ingest or a sweep rather than in its first second: the median and the
// worst of each page are printed, and a page misses when its worst does
// (issue 29: the targets hold "at any moment"). With busy nil, it is
// b.runs rounds and their median. Cold, nothing warms the server first and
// each page's first call is the figure: right after a restart, the first
// request of each kind is one a user waits for.
func (b *readBench) pagesWhile(ctx context.Context, busy func() bool, cold bool) (missed []string, err error) {
	const query = `query($f: IocFilter, $o: IocOrder) { iocs(first: 100, filter: $f, orderBy: $o) {
	totalCount nodes { id type value score tags firstSeen lastSeen expirationDate } pageInfo { endCursor hasNextPage } } }`
	type pageCase struct {
		name   string
		filter map[string]any
		order  map[string]any
	}
	cases := []pageCase{{name: "order id (default)"}}
	for _, f := range []string{"VALUE", "TYPE", "SCORE", "FIRST_SEEN", "LAST_SEEN", "EXPIRATION_DATE"} {
		for _, d := range []string{"ASC", "DESC"} {
			cases = append(cases, pageCase{name: "order " + f + " " + d, order: map[string]any{"field": f, "direction": d}})
		}
	}
	now := time.Now().UTC()
	for _, c := range []struct {
		name string
		v    map[string]any
	}{
		{"filter type DOMAIN", map[string]any{"type": []string{"DOMAIN"}}},
		{"filter value", map[string]any{"value": "host-500.example.com"}},
		{"filter valuePrefix", map[string]any{"valuePrefix": "host-12"}},
		{"filter search", map[string]any{"search": benchSearch}},
		{"filter feedId", map[string]any{"feedId": fmt.Sprint(b.feedID)}},
		{"filter tag (every IoC)", map[string]any{"tag": tsv.Tag}},
		{"filter tag (1%)", map[string]any{"tag": rareTag}},
		{"filter minScore 90", map[string]any{"minScore": 90}},
		{"filter expiresBefore +1d", map[string]any{"expiresBefore": now.Add(24 * time.Hour).Format(time.RFC3339)}},
		{"filter expiresAfter now", map[string]any{"expiresAfter": now.Format(time.RFC3339)}},
	} {
		cases = append(cases, pageCase{name: c.name, filter: c.v})
	}
	// Filters in the orders that read kind after kind (type order) or
	// merge each kind's values (value order), where a kind that has none of
	// a filter's IoCs cost a walk of the whole kind; a prefix newest first
	// and by score, whose IoCs (old ones, at 10,000,000) a walk of the
	// order meets after most others; a tag of few IoCs by score, whose walk
	// of the score's keys meets a page after a hundred keys a match; and an
	// expiry range in orders whose walk meets the short-lived IoCs of a run
	// after every other: by sightings and score, which the expiry zones'
	// bounds serve, and by value both ways, which the days of expiries
	// serve on PostgreSQL and the zones' values on SQLite (in the growth
	// curve, the range's domains are few and spread among the store's:
	// generateRun).
	for _, c := range []struct {
		name       string
		v          map[string]any
		field, dir string
	}{
		{"tag (1%)", map[string]any{"tag": rareTag}, "VALUE", "ASC"},
		{"tag (1%)", map[string]any{"tag": rareTag}, "TYPE", "ASC"},
		{"feedId", map[string]any{"feedId": fmt.Sprint(b.feedID)}, "TYPE", "DESC"},
		{"minScore 90", map[string]any{"minScore": 90}, "TYPE", "ASC"},
		{"expiresAfter now", map[string]any{"expiresAfter": now.Format(time.RFC3339)}, "TYPE", "DESC"},
		{"type DOMAIN", map[string]any{"type": []string{"DOMAIN"}}, "TYPE", "ASC"},
		{"valuePrefix", map[string]any{"valuePrefix": "host-12"}, "FIRST_SEEN", "DESC"},
		{"valuePrefix", map[string]any{"valuePrefix": "host-12"}, "SCORE", "DESC"},
		{"tag (1%)", map[string]any{"tag": rareTag}, "SCORE", "DESC"},
		{"expiresBefore +1d", map[string]any{"expiresBefore": now.Add(24 * time.Hour).Format(time.RFC3339)}, "FIRST_SEEN", "ASC"},
		{"expiresBefore +1d", map[string]any{"expiresBefore": now.Add(24 * time.Hour).Format(time.RFC3339)}, "SCORE", "ASC"},
		{"expiresBefore +1d", map[string]any{"expiresBefore": now.Add(24 * time.Hour).Format(time.RFC3339)}, "VALUE", "ASC"},
		{"expiresBefore +1d", map[string]any{"expiresBefore": now.Add(24 * time.Hour).Format(time.RFC3339)}, "VALUE", "DESC"},
	} {
		cases = append(cases, pageCase{name: c.name + ", " + c.field + " " + c.dir, filter: c.v,
			order: map[string]any{"field": c.field, "direction": c.dir}})
	}
	// Unless cold, warm once, as a server that has been answering is. A
	// page the server stops at its request deadline is timed at it: that
	// is a finding, not a failure of the bench.
	if !cold {
		for _, c := range cases {
			if err := b.graphql(ctx, query, map[string]any{"f": c.filter, "o": c.order}, nil); err != nil && !stoppedAtDeadline(err) {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
		}
	}
	times := make([][]float64, len(cases))
	totals := make([]int, len(cases))
	for round := 0; round < b.runs || busy != nil && busy(); round++ {
		for i, c := range cases {
			var resp struct {
				Iocs struct {
					TotalCount int
					Nodes      []struct{ ID string }
				}
			}
			secs, err := timed(func() error {
				return b.graphql(ctx, query, map[string]any{"f": c.filter, "o": c.order}, &resp)
			})
			if err != nil && !stoppedAtDeadline(err) {
				return nil, fmt.Errorf("%s: %w", c.name, err)
			}
			times[i] = append(times[i], secs)
			totals[i] = resp.Iocs.TotalCount
		}
	}
	for i, c := range cases {
		m, worst := median(times[i]), slices.Max(times[i])
		judged := m
		switch {
		case busy != nil:
			judged = worst
		case cold:
			judged = times[i][0]
		}
		mark := "ok"
		if judged > pageTarget.Seconds() {
			mark = "MISSED"
			missed = append(missed, c.name)
		}
		if cold {
			fmt.Printf("  page %-34s %7.1f ms first call  totalCount %8d  %s\n", c.name, judged*1e3, totals[i], mark)
			continue
		}
		if busy == nil {
			fmt.Printf("  page %-34s %7.1f ms  totalCount %8d  %s\n", c.name, m*1e3, totals[i], mark)
			continue
		}
		fmt.Printf("  page %-34s %7.1f ms median, %7.1f ms worst of %3d  totalCount %8d  %s\n",
			c.name, m*1e3, worst*1e3, len(times[i]), totals[i], mark)
	}
	return missed, nil
}

// stoppedAtDeadline reports whether err is the server's answer to a
// request it stopped at its deadline.
func stoppedAtDeadline(err error) bool {
	return strings.Contains(err.Error(), "the request took longer than the server allows")
}
