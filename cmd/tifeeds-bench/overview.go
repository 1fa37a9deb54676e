package main

import (
	"context"
	"fmt"
	"time"
)

// overviewTarget is what a first Overview page load may take to compute.
const overviewTarget = 2 * time.Second

// overview times the Overview page's figures: computed from the tables
// (what the first load after the IoCs changed pays, at most once a minute)
// and answered from the cache over GraphQL (every other load).
func (b *readBench) overview(ctx context.Context) error {
	var cold []float64
	for range b.runs {
		secs, err := timed(func() error {
			_, err := b.st.ComputeOverview(ctx, time.Now())
			return err
		})
		if err != nil {
			return fmt.Errorf("overview: %w", err)
		}
		cold = append(cold, secs)
	}
	const query = `{ overview { iocCount byType { type count } byFeed { feed { id name } count }
	days { day added expired } topTags { tag count } expiring { day count } feeds { running nextRun feed { id name statusMessage } } } }`
	if err := b.graphql(ctx, query, nil, nil); err != nil { // fills the cache
		return fmt.Errorf("overview: %w", err)
	}
	var warm []float64
	for range b.runs {
		secs, err := timed(func() error { return b.graphql(ctx, query, nil, nil) })
		if err != nil {
			return fmt.Errorf("overview: %w", err)
		}
		warm = append(warm, secs)
	}
	mark := "ok"
	if median(cold) > overviewTarget.Seconds() {
		mark = "MISSED"
	}
	fmt.Printf("  overview computed %7.1f ms (target %.0f ms) %s; cached over GraphQL %6.1f ms\n",
		median(cold)*1e3, overviewTarget.Seconds()*1e3, mark, median(warm)*1e3)
	return nil
}
