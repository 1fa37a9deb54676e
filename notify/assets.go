package notify

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tifeeds/tifeeds/allowlist"
	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// Bounds of the asset watch.
const (
	// MaxAssets is how many assets a tenant may watch.
	MaxAssets = 100000
	// MaxAssetsPerCall bounds one add or delete (and one CSV upload).
	MaxAssetsPerCall = MaxAssets
	// MaxCSVBytes bounds an uploaded CSV (the request body limit of the
	// server is 1 MiB by default; the dashboard sends a large file in parts).
	MaxCSVBytes = 1 << 20
	MaxPage     = 1000
	// drainBatch is how many pending asset sightings one transaction
	// matches.
	drainBatch = 500
	// drainPoll is how often the watch looks for pending sightings it was
	// not woken for: another instance's, or a killed one's.
	drainPoll = 5 * time.Second
	// backMatchScan bounds the IoCs one back-match reads.
	backMatchScan = 20_000_000
	scanPage      = 5000
	// maxInvalidListed is how many invalid values an error names.
	maxInvalidListed = 10
)

// AssetStore is what the asset watch needs of the store.
type AssetStore interface {
	AddTenantAssets(ctx context.Context, tenantID string, assets []store.TenantAsset, max int, now time.Time) ([]store.TenantAsset, error)
	DeleteTenantAssets(ctx context.Context, tenantID string, values []string) (int64, error)
	TenantAssets(ctx context.Context, tenantID string, first int, after int64) ([]store.TenantAsset, error)
	CountTenantAssets(ctx context.Context, tenantID string) (int64, error)
	EachTenantAsset(ctx context.Context, fn func(*store.TenantAsset)) error
	ScanIoCs(ctx context.Context, types []string, after int64, limit int) ([]store.IoCRef, error)
	LiveSightings(ctx context.Context, ids []int64, now time.Time) ([]store.SightingRef, error)
	DrainAssetSightings(ctx context.Context, limit int, now time.Time, m store.AssetMatch) (int, []store.AssetHit, error)
	RecordAssetHits(ctx context.Context, hits []store.AssetHit, now time.Time, notify func(*store.AssetHit) store.Notification) ([]store.AssetHit, error)
	AssetHits(ctx context.Context, tenantID *string, first int, after int64) ([]store.AssetHit, error)
	TenantAssetsByID(ctx context.Context, ids []int64) ([]store.TenantAsset, error)
	Feed(ctx context.Context, id int64) (*store.Feed, error)
}

// Assets is the tenant asset watch: the assets API (scoped to the caller),
// the in-memory index ingestion asks (Covers) of every indicator, and the
// hits it records from the pending asset sightings ingestion writes with
// its batches (woken by Sighted, and polling for other instances').
type Assets struct {
	Store  AssetStore
	Bus    *events.Bus
	Worker *Worker
	Audit  *audit.Log
	// Allowlist keeps allowlisted values from hitting when stored IoCs are
	// matched against new assets (ingestion drops them before).
	Allowlist allowlist.Matcher
	Log       *slog.Logger
	Now       func() time.Time

	idx  atomic.Pointer[Index]
	load sync.Mutex
	wake chan struct{}
	back chan []store.TenantAsset
	wg   sync.WaitGroup
	once sync.Once
}

// AssetHitData is the data of an ASSET_HIT notification.
type AssetHitData struct {
	Asset     string    `json:"asset"`
	IoCType   string    `json:"iocType"`
	IoCValue  string    `json:"iocValue"`
	Score     int       `json:"score"`
	Tags      []string  `json:"tags"`
	FeedID    int64     `json:"feedId"`
	FeedName  string    `json:"feedName"`
	At        time.Time `json:"at"`
	ExpiresAt time.Time `json:"expiresAt"`
}

func (a *Assets) init() {
	a.once.Do(func() {
		if a.Log == nil {
			a.Log = slog.Default()
		}
		if a.Now == nil {
			a.Now = time.Now
		}
		a.wake = make(chan struct{}, 1)
		a.back = make(chan []store.TenantAsset, 64)
	})
}

// Load builds the index from the store.
func (a *Assets) Load(ctx context.Context) error {
	a.init()
	a.load.Lock()
	defer a.load.Unlock()
	b := NewIndexBuilder()
	err := a.Store.EachTenantAsset(ctx, func(t *store.TenantAsset) {
		b.Add(t.ID, allowlist.EntryKind(t.Kind), t.Value)
	})
	if err != nil {
		return err
	}
	a.idx.Store(b.Build())
	return nil
}

// Start loads the index and matches what ingestion reports until ctx
// ends; the index is built again whenever an instance changes the assets
// (the bus's SignalAssets). Wait waits for it.
func (a *Assets) Start(ctx context.Context) error {
	a.init()
	if err := a.Load(ctx); err != nil {
		return fmt.Errorf("notify: unable to read the tenants' assets: %w", err)
	}
	reload := make(chan struct{}, 1)
	cancel := a.Bus.OnSignal(events.SignalAssets, func() {
		select {
		case reload <- struct{}{}:
		default:
		}
	})
	a.wg.Add(3)
	go func() {
		defer a.wg.Done()
		defer cancel()
		for {
			select {
			case <-ctx.Done():
				return
			case <-reload:
				if err := a.Load(ctx); err != nil && ctx.Err() == nil {
					a.Log.Warn("Unable to reload the tenants' assets", "error", err)
				}
			}
		}
	}()
	go func() {
		defer a.wg.Done()
		// What a killed instance left is drained at once.
		t := time.NewTicker(drainPoll)
		defer t.Stop()
		for {
			if err := a.Flush(ctx); err != nil && ctx.Err() == nil {
				a.Log.Warn("Unable to record asset hits", "error", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-a.wake:
			case <-t.C:
			}
		}
	}()
	go func() {
		defer a.wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case added := <-a.back:
				n, err := a.BackMatch(ctx, added)
				if err != nil && ctx.Err() == nil {
					a.Log.Warn("Unable to match stored indicators against new assets", "error", err)
				} else if n > 0 {
					a.Log.Info("Stored indicators hit new assets", "count", n)
				}
			}
		}
	}()
	return nil
}

// Wait returns once Start's goroutines have ended.
func (a *Assets) Wait() { a.wg.Wait() }

// Covers reports whether an indicator covers any tenant's asset: the
// runner asks it of every indicator, and writes those that do with their
// batch, as pending asset sightings.
func (a *Assets) Covers(kind ioc.Kind, value string) bool {
	return a.idx.Load().Covers(kind, value)
}

// Sighted wakes the watch: a batch with pending asset sightings has
// committed. It never blocks; the sightings are in the database, so
// nothing is lost when the watch is behind.
func (a *Assets) Sighted() {
	a.init()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Flush matches the pending asset sightings into hits until none is left,
// on the caller's goroutine (Start's loop; tests and the bench, which run
// no Start).
func (a *Assets) Flush(ctx context.Context) error {
	a.init()
	x := a.idx.Load()
	if x == nil {
		return nil // not loaded: nothing to match against yet
	}
	m := store.AssetMatch{
		Candidates: func(p *store.PendingAssetSighting) []int64 {
			var ids []int64
			x.Each(ioc.Kind(p.Kind), p.Value, func(id int64) bool {
				ids = append(ids, id)
				return true
			})
			return ids
		},
		Covers: func(t *store.TenantAsset, iocType, iocValue string) bool {
			return Covers(allowlist.EntryKind(t.Kind), t.Value, ioc.Kind(iocType), iocValue)
		},
		Notify: a.notification,
	}
	for {
		n, fresh, err := a.Store.DrainAssetSightings(ctx, drainBatch, a.Now(), m)
		if err != nil {
			return err
		}
		if len(fresh) > 0 {
			a.Worker.Wake()
		}
		if n < drainBatch {
			return nil
		}
	}
}

// confirm fills each hit's tenant and asset from the store, dropping those
// whose asset is gone or does not cover the indicator (a hash collision of
// the index).
func (a *Assets) confirm(ctx context.Context, hits []store.AssetHit) ([]store.AssetHit, error) {
	ids := make([]int64, 0, len(hits))
	seen := map[int64]bool{}
	for _, h := range hits {
		if !seen[h.AssetID] {
			seen[h.AssetID] = true
			ids = append(ids, h.AssetID)
		}
	}
	rows, err := a.Store.TenantAssetsByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*store.TenantAsset, len(rows))
	for i := range rows {
		byID[rows[i].ID] = &rows[i]
	}
	out := hits[:0]
	for _, h := range hits {
		t := byID[h.AssetID]
		if t == nil || !Covers(allowlist.EntryKind(t.Kind), t.Value, ioc.Kind(h.IoCType), h.IoCValue) {
			continue
		}
		h.TenantID, h.Asset = t.TenantID, t.Value
		out = append(out, h)
	}
	return out, nil
}

func (a *Assets) record(ctx context.Context, hits []store.AssetHit) error {
	hits, err := a.confirm(ctx, hits)
	if err != nil || len(hits) == 0 {
		return err
	}
	fresh, err := a.Store.RecordAssetHits(ctx, hits, a.Now(), a.notification)
	if err != nil {
		return err
	}
	if len(fresh) > 0 {
		a.Worker.Wake()
	}
	return nil
}

// notification is a fresh hit's ASSET_HIT notification.
func (a *Assets) notification(h *store.AssetHit) store.Notification {
	tenant := h.TenantID
	data := AssetHitData{Asset: h.Asset, IoCType: h.IoCType, IoCValue: h.IoCValue, Score: h.Score, Tags: h.Tags,
		FeedID: h.FeedID, FeedName: h.FeedName, At: h.Time(), ExpiresAt: h.Expires()}
	return store.Notification{Event: store.EventAssetHit, TenantID: &tenant, Body: envelope(store.EventAssetHit, tenant, h.Time(), data)}
}

// BackMatch records the hits of the stored, live IoCs covering assets
// (just added): one pass over the stored IP, domain and URL IoCs, at most
// backMatchScan of them. It returns how many hits it recorded.
func (a *Assets) BackMatch(ctx context.Context, assets []store.TenantAsset) (int, error) {
	a.init()
	b := NewIndexBuilder()
	for _, t := range assets {
		b.Add(t.ID, allowlist.EntryKind(t.Kind), t.Value)
	}
	x := b.Build()
	if x.Len() == 0 {
		return 0, nil
	}
	types := []string{string(ioc.IP), string(ioc.Domain), string(ioc.URL)}
	var after int64
	total := 0
	for scanned := 0; scanned < backMatchScan; {
		page, err := a.Store.ScanIoCs(ctx, types, after, scanPage)
		if err != nil {
			return total, err
		}
		if len(page) == 0 {
			break
		}
		scanned += len(page)
		after = page[len(page)-1].ID
		covering := map[int64][]int64{}
		refs := map[int64]store.IoCRef{}
		for _, r := range page {
			kind := ioc.Kind(r.Type)
			if a.Allowlist != nil {
				if _, ok := a.Allowlist.Match(kind, r.Value); ok {
					continue
				}
			}
			x.Each(kind, r.Value, func(id int64) bool {
				covering[r.ID] = append(covering[r.ID], id)
				refs[r.ID] = r
				return true
			})
		}
		if len(covering) == 0 {
			continue
		}
		ids := make([]int64, 0, len(covering))
		for id := range covering {
			ids = append(ids, id)
		}
		now := a.Now()
		sightings, err := a.Store.LiveSightings(ctx, ids, now)
		if err != nil {
			return total, err
		}
		var hits []store.AssetHit
		for _, s := range sightings {
			r := refs[s.IoCID]
			for _, id := range covering[s.IoCID] {
				hits = append(hits, store.NewAssetHit(store.AssetHit{AssetID: id,
					IoCType: r.Type, IoCValue: r.Value, Score: s.Score, Tags: s.Tags, FeedID: s.FeedID, FeedName: s.FeedName}, now, s.ExpiresAt))
			}
		}
		if err := a.record(ctx, hits); err != nil {
			return total, err
		}
		total += len(hits)
	}
	return total, nil
}

// tenantOf checks that the caller may manage tenantID's assets: root any
// tenant, a tenant's user their own.
func tenantOf(ctx context.Context, tenantID string) error {
	u, err := auth.UserFrom(ctx)
	if err != nil {
		return err
	}
	if u.Scope == store.ScopeRoot {
		return nil
	}
	if u.TenantID == nil || *u.TenantID != tenantID {
		return auth.ErrForbidden
	}
	return nil
}

// ParseAssets reads values as assets (an IP address, a CIDR range, a
// domain or a URL prefix, as allowlist entries are read), each once. The
// error names the first invalid values.
func ParseAssets(values []string) ([]store.TenantAsset, error) {
	if len(values) > MaxAssetsPerCall {
		return nil, store.Invalid("values", "at most %d values at once", MaxAssetsPerCall)
	}
	seen := make(map[string]bool, len(values))
	out := make([]store.TenantAsset, 0, len(values))
	var bad []string
	nbad := 0
	for _, v := range values {
		kind, value, err := allowlist.ParseEntry(v)
		if err != nil {
			nbad++
			if len(bad) < maxInvalidListed {
				bad = append(bad, fmt.Sprintf("%q", truncate(v, 80)))
			}
			continue
		}
		if seen[value] {
			continue
		}
		seen[value] = true
		out = append(out, store.TenantAsset{Kind: string(kind), Value: value})
	}
	if nbad > 0 {
		return nil, store.Invalid("values", "%d values are not an IP address, a CIDR range (/8 or narrower), a domain or a URL prefix: %s",
			nbad, strings.Join(bad, ", "))
	}
	return out, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Add adds values to tenantID's assets and returns those it added (values
// watched already are skipped). Stored IoCs are matched against them in
// the background.
func (a *Assets) Add(ctx context.Context, tenantID string, values []string) ([]store.TenantAsset, error) {
	a.init()
	if err := tenantOf(ctx, tenantID); err != nil {
		return nil, err
	}
	assets, err := ParseAssets(values)
	if err != nil {
		return nil, err
	}
	added, err := a.Store.AddTenantAssets(ctx, tenantID, assets, MaxAssets, a.Now())
	if err != nil {
		return nil, err
	}
	if len(added) == 0 {
		return added, nil
	}
	a.Audit.Record(ctx, audit.AssetsAdd, audit.TenantTarget(tenantID, ""), map[string]any{"count": len(added), "values": sample(added)})
	if err := a.Load(ctx); err != nil {
		a.Log.Warn("Unable to reload the tenants' assets", "error", err)
	}
	a.Bus.PublishSignal(events.SignalAssets)
	select {
	case a.back <- added:
	default:
		a.Log.Warn("Too many back-matches waiting; new assets hit from the next sighting only", "tenant_id", tenantID, "count", len(added))
	}
	return added, nil
}

// sample is the first values of assets, for the audit record.
func sample(assets []store.TenantAsset) []string {
	n := min(len(assets), 20)
	out := make([]string, n)
	for i := range n {
		out[i] = assets[i].Value
	}
	return out
}

// ImportCSV adds the assets in the first column of a CSV (a header row
// whose first cell is not an asset is skipped).
func (a *Assets) ImportCSV(ctx context.Context, tenantID, text string) ([]store.TenantAsset, error) {
	if err := tenantOf(ctx, tenantID); err != nil {
		return nil, err
	}
	if len(text) > MaxCSVBytes {
		return nil, store.Invalid("csv", "at most %d bytes", MaxCSVBytes)
	}
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	var values []string
	for row := 0; ; row++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, store.Invalid("csv", "not CSV: %v", err)
		}
		if len(rec) == 0 || strings.TrimSpace(rec[0]) == "" || strings.HasPrefix(strings.TrimSpace(rec[0]), "#") {
			continue
		}
		if row == 0 {
			if _, _, err := allowlist.ParseEntry(rec[0]); err != nil {
				continue // a header
			}
		}
		if len(values) == MaxAssetsPerCall {
			return nil, store.Invalid("csv", "at most %d assets at once", MaxAssetsPerCall)
		}
		values = append(values, strings.Clone(rec[0]))
	}
	return a.Add(ctx, tenantID, values)
}

// Delete deletes values (as given or normalised) from tenantID's assets,
// with their hits, and returns how many it deleted.
func (a *Assets) Delete(ctx context.Context, tenantID string, values []string) (int64, error) {
	if err := tenantOf(ctx, tenantID); err != nil {
		return 0, err
	}
	if len(values) > MaxAssetsPerCall {
		return 0, store.Invalid("values", "at most %d values at once", MaxAssetsPerCall)
	}
	keys := make([]string, 0, len(values))
	for _, v := range values {
		if _, value, err := allowlist.ParseEntry(v); err == nil {
			keys = append(keys, value)
		} else {
			keys = append(keys, strings.TrimSpace(v))
		}
	}
	n, err := a.Store.DeleteTenantAssets(ctx, tenantID, keys)
	if err != nil || n == 0 {
		return n, err
	}
	a.Audit.Record(ctx, audit.AssetsDelete, audit.TenantTarget(tenantID, ""), map[string]any{"count": n})
	if err := a.Load(ctx); err != nil {
		a.Log.Warn("Unable to reload the tenants' assets", "error", err)
	}
	a.Bus.PublishSignal(events.SignalAssets)
	return n, nil
}

// List returns a page of tenantID's assets and how many it has.
func (a *Assets) List(ctx context.Context, tenantID string, first int, after int64) ([]store.TenantAsset, int64, error) {
	if err := tenantOf(ctx, tenantID); err != nil {
		return nil, 0, err
	}
	if first <= 0 || first > MaxPage {
		return nil, 0, store.Invalid("first", "must be 1 to %d", MaxPage)
	}
	rows, err := a.Store.TenantAssets(ctx, tenantID, first, after)
	if err != nil {
		return nil, 0, err
	}
	n, err := a.Store.CountTenantAssets(ctx, tenantID)
	return rows, n, err
}

// Hits returns a page of hits, newest first: of tenantID, or of every
// tenant when it is nil (root only). A tenant's user sees their own.
func (a *Assets) Hits(ctx context.Context, tenantID *string, first int, after int64) ([]store.AssetHit, error) {
	u, err := auth.UserFrom(ctx)
	if err != nil {
		return nil, err
	}
	if u.Scope != store.ScopeRoot {
		if u.TenantID == nil || tenantID != nil && *tenantID != *u.TenantID {
			return nil, auth.ErrForbidden
		}
		tenantID = u.TenantID
	}
	if first <= 0 || first > MaxPage {
		return nil, store.Invalid("first", "must be 1 to %d", MaxPage)
	}
	return a.Store.AssetHits(ctx, tenantID, first, after)
}
