package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/notify"
)

// assetsEnv, set for an ingest child to a number N, makes it ingest with
// the asset watch's index over N tenants × benchAssetsPerTenant assets.
const assetsEnv = "TIFEEDS_BENCH_ASSETS"

// The asset watch measured (issue 28: 10,000 tenants × 100 assets, at most
// a 10 % drop of the TSV ingest rate).
const (
	benchAssetTenants    = 10000
	benchAssetsPerTenant = 100
)

// benchWatch is the asset watch as the runner sees it: the notify index
// answers Covers in the sink, and the covering indicators are written with
// their batch (pending asset sightings); Sighted counts the wake-ups the
// real watch would get, whose goroutine records hits off the ingest path.
type benchWatch struct {
	x       *notify.Index
	sighted atomic.Int64
}

func (w *benchWatch) Covers(kind ioc.Kind, value string) bool { return w.x.Covers(kind, value) }

func (w *benchWatch) Sighted() { w.sighted.Add(1) }

// childWatch returns the asset watch an ingest child applies: nil unless
// assetsEnv is set.
func childWatch() (*benchWatch, error) {
	v := os.Getenv(assetsEnv)
	if v == "" {
		return nil, nil
	}
	tenants, err := strconv.Atoi(v)
	if err != nil {
		return nil, fmt.Errorf("%s=%q: %w", assetsEnv, v, err)
	}
	x, err := benchIndex(tenants)
	if err != nil {
		return nil, err
	}
	return &benchWatch{x: x}, nil
}

// benchIndex is the asset watch's index over tenants × benchAssetsPerTenant
// assets, asset j of tenant t (benchAsset) under the id
// t×benchAssetsPerTenant+j+1.
func benchIndex(tenants int) (*notify.Index, error) {
	b := notify.NewIndexBuilder()
	id := int64(0)
	for t := range tenants {
		for j := range benchAssetsPerTenant {
			id++
			raw := benchAsset(t, j)
			kind, value, err := allowlist.ParseEntry(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", raw, err)
			}
			b.Add(id, kind, value)
		}
	}
	return b.Build(), nil
}

// benchAsset is asset j of tenant t, in the shapes of the generated rows
// so that each lookup does its full work: addresses and /24 ranges beside
// the rows' 11.0.0.0/8, domains under the rows' example.com (a walk that
// probes every parent), URL prefixes on the rows' site-N.example.org
// hosts. One asset of every hundredth tenant covers rows (a /28 among the
// rows' addresses: 1,600 of a million rows hit), so hits are found and
// handed over as well.
func benchAsset(t, j int) string {
	i := t*benchAssetsPerTenant + j
	switch {
	case j == 0 && t%100 == 0:
		return fmt.Sprintf("11.%d.%d.0/28", t/100%16, t/100*7%256)
	case j%10 < 4:
		return fmt.Sprintf("12.%d.%d.%d", i>>16&255, i>>8&255, i&255)
	case j%10 < 6:
		return fmt.Sprintf("13.%d.%d.0/24", i>>16&255, i>>8&255)
	case j%10 < 9:
		return fmt.Sprintf("tenant-%d-%d.example.com", t, j)
	default:
		return fmt.Sprintf("http://site-%d.example.org/t%d/", i%10007, t)
	}
}

// benchAssets measures TSV ingestion into SQLite without and with the
// asset watch, interleaved, then how fast hits reach a webhook.
func benchAssets(ctx context.Context, dir, file string, rows, batch, runs int) error {
	var without, with []float64
	db := "sqlite:" + filepath.Join(dir, "assets.db")
	for range runs {
		a, err := ingestChildEnv(db, file, batch, nil)
		if err != nil {
			return err
		}
		b, err := ingestChildEnv(db, file, batch, []string{assetsEnv + "=" + strconv.Itoa(benchAssetTenants)})
		if err != nil {
			return err
		}
		without, with = append(without, float64(a.Stored)/a.Seconds), append(with, float64(b.Stored)/b.Seconds)
		fmt.Printf("  assets run: without %.0f IoCs/s, with %.0f IoCs/s (%.0f MB peak RSS against %.0f)\n",
			float64(a.Stored)/a.Seconds, float64(b.Stored)/b.Seconds, float64(b.MaxRSS)/1e6, float64(a.MaxRSS)/1e6)
	}
	mw, mb := median(without), median(with)
	fmt.Printf("Asset watch (SQLite, %d rows): without %.0f IoCs/s, with %d tenants × %d assets %.0f IoCs/s: %.3f of the rate (target ≥ 0.90)\n\n",
		rows, mw, benchAssetTenants, benchAssetsPerTenant, mb, mb/mw)
	return benchAssetLatency(ctx, dir, batch)
}
