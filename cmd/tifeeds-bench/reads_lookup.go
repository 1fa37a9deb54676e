package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// lookupValues returns n raw values, half of them stored IoCs, with their
// kinds.
func (b *readBench) lookupValues(ctx context.Context, n int) ([]string, []ioc.Kind, error) {
	var known []struct {
		Type  string
		Value string
	}
	stats, err := b.st.IoCStats(ctx)
	if err != nil {
		return nil, nil, err
	}
	step := max(1, int(stats.Count)/(n/2))
	if err := b.st.DB.NewRaw(fmt.Sprintf("SELECT type, value FROM iocs WHERE id %% %d = %d ORDER BY id LIMIT %d", step, 7%step, n/2)).
		Scan(ctx, &known); err != nil {
		return nil, nil, err
	}
	var values []string
	var kinds []ioc.Kind
	for i, k := range known {
		values = append(values, k.Value)
		kinds = append(kinds, ioc.Kind(k.Type))
		// An absent value of the same kind beside each known one.
		var v string
		switch ioc.Kind(k.Type) {
		case ioc.Domain:
			v = fmt.Sprintf("absent-%d.example.com", i)
		case ioc.IP:
			v = fmt.Sprintf("12.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		case ioc.URL:
			v = fmt.Sprintf("http://absent-%d.example.org/path?id=%d", i, i)
		case ioc.SHA256:
			v = fmt.Sprintf("f%063x", i)
		case ioc.MD5:
			v = fmt.Sprintf("e%031x", i)
		default:
			return nil, nil, fmt.Errorf("unexpected kind %s", k.Type)
		}
		kind, norm, err := ioc.Detect(v)
		if err != nil || kind != ioc.Kind(k.Type) {
			return nil, nil, fmt.Errorf("absent value %q reads as %s (%v), want %s", v, kind, err, k.Type)
		}
		values = append(values, norm)
		kinds = append(kinds, kind)
	}
	return values, kinds, nil
}

// lookups compares lookupIocs with the database joining the same values
// (all columns read, through the same driver).
func (b *readBench) lookups(ctx context.Context, n int) error {
	values, kinds, err := b.lookupValues(ctx, n)
	if err != nil {
		return err
	}
	const query = `query($v: [String!]!) { lookupIocs(values: $v) { input known type value
	ioc { id type value score tags firstSeen lastSeen expirationDate } } }`
	join := func() (int, error) {
		var rows *sql.Rows
		var err error
		if b.st.Dialect == store.Postgres {
			ks := make([]string, len(kinds))
			for i, k := range kinds {
				ks[i] = string(k)
			}
			rows, err = b.st.DB.DB.QueryContext(ctx, `SELECT i.* FROM unnest($1::text[], $2::text[]) AS v(t, val)
JOIN iocs i ON i.type = v.t AND i.value = v.val COLLATE "C"`, ks, values)
		} else {
			pairs := make([][2]string, len(values))
			for i := range values {
				pairs[i] = [2]string{string(kinds[i]), values[i]}
			}
			j, _ := json.Marshal(pairs)
			rows, err = b.st.DB.QueryContext(ctx, `SELECT i.* FROM json_each(?) AS v
CROSS JOIN iocs i WHERE i.type = v.value ->> 0 AND i.value = v.value ->> 1`, string(j))
		}
		if err != nil {
			return 0, err
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		dest := make([]any, len(cols))
		for i := range dest {
			dest[i] = new(sql.RawBytes)
		}
		found := 0
		for rows.Next() {
			if err := rows.Scan(dest...); err != nil {
				return 0, err
			}
			found++
		}
		return found, rows.Err()
	}
	if path := os.Getenv(lookupProfileEnv); path != "" {
		if err := profile(path, func() error {
			for range 10 {
				if err := b.graphql(ctx, query, map[string]any{"v": values}, nil); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	// One call untimed first, as every page is called once before the
	// quiet phase's timing: the first lookup on the store just opened
	// reads the (type, value) index's pages into its reader connection's
	// cache, which the join, on another connection, does not count. At
	// one run a size that made lookupIocs 2.6 times the join in the growth
	// curve at 1 M and 10 M; at 10 M a fresh process's first lookup of
	// 10,000 values took 282-399 ms, the next 81-117 (cmd/zzlookup).
	if err := b.graphql(ctx, query, map[string]any{"v": values}, nil); err != nil {
		return err
	}
	var s sideBySide
	for range b.runs {
		var found int
		base, err := timed(func() (err error) { found, err = join(); return err })
		if err != nil {
			return fmt.Errorf("lookup baseline: %w", err)
		}
		if found != n/2 {
			return fmt.Errorf("lookup baseline found %d of %d values, want %d", found, n, n/2)
		}
		// Timed until the whole answer has arrived, as the baseline until
		// its last row; decoding it is the client's work, checked after.
		var raw []byte
		ours, err := timed(func() (err error) { raw, err = b.graphqlRaw(ctx, query, map[string]any{"v": values}); return err })
		if err != nil {
			return err
		}
		var resp struct{ LookupIocs []struct{ Known bool } }
		if err := decodeGraphQL(raw, &resp); err != nil {
			return err
		}
		known := 0
		for _, r := range resp.LookupIocs {
			if r.Known {
				known++
			}
		}
		if known != n/2 {
			return fmt.Errorf("lookupIocs knew %d of %d values, want %d", known, n, n/2)
		}
		s.add(ours, base)
	}
	fmt.Printf("  lookupIocs %d   %6.0f ms vs the database's join %6.0f ms   %5.2fx (target <= 2x; each run: %s)\n",
		n, median(s.ours)*1e3, median(s.base)*1e3, 1/s.ratio(), s.each())
	return b.concurrentLookups(ctx, query, values)
}

// lookupClients is how many clients concurrentLookups runs at once.
const lookupClients = 4

// concurrentLookups prints what lookupClients clients, each looking up
// values b.runs times at once, wait for a lookup and how many they get
// done a second: a lookup of 1,000 values or more is shared out among the
// cores (store.IoCsByKeys), and on SQLite each takes up to two of its four
// read connections. No target: the figure beside the single client's.
func (b *readBench) concurrentLookups(ctx context.Context, query string, values []string) error {
	times := make([][]float64, lookupClients)
	var g errgroup.Group
	start := time.Now()
	for c := range lookupClients {
		g.Go(func() error {
			for range b.runs {
				secs, err := timed(func() error { return b.graphql(ctx, query, map[string]any{"v": values}, nil) })
				if err != nil {
					return fmt.Errorf("lookupIocs, %d clients: %w", lookupClients, err)
				}
				times[c] = append(times[c], secs)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	wall := time.Since(start).Seconds()
	all := slices.Concat(times...)
	fmt.Printf("  lookupIocs %d x%d clients at once: %6.0f ms a lookup (median; worst %.0f), %5.1f lookups/s\n",
		len(values), lookupClients, median(all)*1e3, slices.Max(all)*1e3, float64(len(all))/wall)
	return nil
}

// lookupProfileEnv, when set, names the file where a CPU profile of ten
// lookupIocs calls (the last database's) is written.
const lookupProfileEnv = "TIFEEDS_BENCH_LOOKUP_PROFILE"
