package store

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/tifeeds/tifeeds/ioc"
)

// iocWriteLockID is the PostgreSQL advisory lock every transaction that
// changes sightings takes first. The aggregates of an IoC (score, tags,
// expiry) are computed from all its sightings; two feeds writing the same IoC
// at once would each compute them without the other's sighting. SQLite
// already has one writer; this gives PostgreSQL the same, per transaction
// (one batch), while readers are never blocked.
const iocWriteLockID = 0x7466656564730002

// Batch is a group of indicators from one feed, applied in one transaction.
type Batch struct {
	FeedID    int64
	Retention time.Duration // expiry = Now + Retention, unless Indicator.ValidUntil is set
	Now       time.Time
	// Indicators are normalised; Revoked ones delete that (feed, source)
	// sighting. Indicators whose expiry is not after Now are skipped.
	Indicators []ioc.Indicator
	Cursor     *string // when non-nil, feeds.cursor is set in the same transaction
	// RunID, when non-zero, is the run the batch belongs to: feed_runs.stored
	// += result.Stored (and added += result.Added) in the same transaction,
	// which fails with ErrRunClosed once that run was closed.
	RunID int64
	// Fetched and Rejected are the run's counts of records read and
	// rejected so far, saved with the batch (never lowered) so that a run
	// closed for its instance gone keeps what it reached.
	Fetched, Rejected int64
}

// BatchResult counts what ApplyBatch changed: sightings stored, those of
// them new to the feed (Added; the others re-report a sighting it has), and
// sightings removed by revocation. Rejections are the indicators it refused
// to store: rules whose sid another feed owns (see claimRules).
type BatchResult struct {
	Stored, Added, Removed int
	Rejections             []BatchRejection
}

// BatchRejection is an indicator of a batch that was not stored: At is its
// place in Batch.Indicators.
type BatchRejection struct {
	At     int
	Reason string
}

type valKey struct {
	kind  ioc.Kind
	value string
}

type sightKey struct {
	valKey
	source string
}

// pendingSighting is one deduplicated sighting of a batch.
type pendingSighting struct {
	sightKey
	score   int
	tags    []string
	tagJSON string
	expires int64      // unix microseconds, as stored
	agg     *aggregate // its IoC's aggregate from the batch alone
	iocID   int64      // once known
	fresh   bool       // its IoC was inserted by this batch, so it has no sighting yet
	inline  bool       // its IoC's row keeps it, the IoC's only sighting (aggregate.feedID)
	text    string     // a Rule's text; "" keeps the stored one
	textAt  int        // the indicator's place in the batch: the latest text wins
}

// storedSighting is a sighting already in the store, read back to recompute
// its IoC's aggregates. feedID is 0 for the row of an IoC without sightings.
type storedSighting struct {
	valKey
	iocID   int64
	feedID  int64
	source  string
	score   int
	tags    []string
	first   int64 // unix microseconds, as stored
	last    int64
	expires int64
	// inline says the sighting is kept in its IoC's row, not in
	// sighting_rows: the IoC's only one (see aggregate.feedID).
	inline bool
}

// aggregate is the summary of an IoC's live sightings.
type aggregate struct {
	valKey
	id      int64
	score   int
	tags    []string
	tagJSON string
	first   int64 // unix microseconds, as stored
	last    int64
	expires int64
	live    bool
	// feedID, when not 0, and source are the IoC's one sighting, which its
	// row keeps (iocs.feed_id, iocs.source) with no row in sighting_rows:
	// the sighting's score, tags, times and expiry are the IoC's. Most IoCs
	// are reported by one feed; a row and two index entries fewer for each
	// is a fifth of PostgreSQL's ingestion (docs/decisions.md, "Inline
	// sightings"). An IoC with more sightings keeps them all as rows.
	feedID int64
	source string
	// inline is the sighting a stored IoC kept in its row, if any.
	inline *storedSighting
	// others says the batch reports the stored IoC from another (feed,
	// source) than its inline sighting's.
	others bool
	// sharedTags says that tags and tagJSON are those of the one sighting
	// the aggregate started from (startFrom), shared rather than copied:
	// a batch's first ingestion makes one aggregate per sighting.
	sharedTags bool
}

// startFrom starts the aggregate from the sighting p, seen from first to
// last. p's tags are normalised (sorted, distinct) and tagJSON is theirs,
// so both are shared, until another sighting adds a tag.
func (a *aggregate) startFrom(p *pendingSighting, first, last int64) {
	a.score, a.first, a.last, a.expires = p.score, first, last, p.expires
	a.tags, a.tagJSON, a.sharedTags = p.tags, p.tagJSON, true
	a.live = true
}

func (a *aggregate) add(score int, tags []string, first, last, expires int64) {
	if !a.live {
		a.score, a.first, a.last, a.expires = score, first, last, expires
		a.tags = slices.Clone(tags)
		a.live = true
		return
	}
	a.score = max(a.score, score)
	a.first = min(a.first, first)
	a.last = max(a.last, last)
	a.expires = max(a.expires, expires)
	for _, t := range tags {
		if !slices.Contains(a.tags, t) {
			if a.sharedTags {
				a.tags, a.tagJSON, a.sharedTags = slices.Clone(a.tags), "", false
			}
			a.tags = append(a.tags, t)
		}
	}
}

func (a *aggregate) seal() {
	if a.sharedTags {
		return // sorted, and encoded, already
	}
	slices.Sort(a.tags)
	a.tagJSON = jsonTags(a.tags)
}

// batchWriter is what ApplyBatch needs of a dialect.
type batchWriter interface {
	// insertNew inserts those of aggs whose (type, value) is not stored yet
	// and sets their id; the others are left alone, with id 0.
	insertNew(ctx context.Context, aggs []*aggregate) error
	// sightings returns every sighting of the stored IoCs named in keys (by
	// kind), and a row with feedID 0 for a stored IoC without any.
	sightings(ctx context.Context, keys map[ioc.Kind][]string) ([]storedSighting, error)
	// updateIoCs sets the aggregates of stored IoCs.
	updateIoCs(ctx context.Context, aggs []*aggregate) error
	// insertSightings writes stored sightings into sighting_rows as they
	// are: the inline sightings of IoCs that gain another.
	insertSightings(ctx context.Context, rows []storedSighting) error
	// upsertSightings writes the batch's sightings to sighting_rows, but
	// for the inline ones (their IoC's row holds them).
	upsertSightings(ctx context.Context, feedID int64, now int64, rows []pendingSighting) error
	deleteSightings(ctx context.Context, feedID int64, rows []storedSighting) (int, error)
	deleteIoCs(ctx context.Context, ids []int64) error
	// ruleTexts returns the stored texts of the Rule IoCs among ids with
	// their owners, and the name of feed feedID.
	ruleTexts(ctx context.Context, feedID int64, ids []int64) (map[int64]ruleText, string, error)
	exec(ctx context.Context, query string, args ...any) (int64, error)
}

// ApplyBatch upserts, in one transaction: one iocs row per (type, value); one
// sightings row per (ioc, feed, source); the aggregates of the touched IoCs
// (score = max of live sightings, tags = union, expires_at = latest sighting
// expiry, first_seen/last_seen = earliest/latest of the sightings); the
// feed's cursor when b.Cursor is set; the run's stored count when b.RunID is
// set; and feeds.last_ingestion = Now when anything was stored. Duplicates
// inside the batch are merged (the last one wins). Revoked indicators delete
// the feed's sighting; an IoC left without a live sighting is deleted.
func (s *Store) ApplyBatch(ctx context.Context, b Batch) (BatchResult, error) {
	p, err := PrepareBatch(b)
	if err != nil {
		return BatchResult{}, err
	}
	return s.ApplyPrepared(ctx, p)
}

// PreparedBatch is a Batch checked, merged and summarised by PrepareBatch,
// the part of ApplyBatch that needs no database, so that a caller can
// prepare a batch on one goroutine while another writes the one before.
type PreparedBatch struct {
	b       Batch // without Indicators, which upserts and revoked hold
	now     int64
	n       int // indicators in the batch
	upserts []pendingSighting
	revoked []sightKey
	fresh   []*aggregate // per IoC, from this batch alone; ordered by (kind, value)
	byKey   map[valKey]*aggregate
}

// PrepareBatch checks b and does what ApplyBatch does before it touches the
// database: merge repeats and summarise the batch per IoC. b.Indicators may
// be reused once it returns.
func PrepareBatch(b Batch) (*PreparedBatch, error) {
	if b.Now.IsZero() {
		b.Now = time.Now()
	}
	b.Now = dbTime(b.Now)
	now := micros(b.Now)
	upserts, revoked, err := dedupe(b, now)
	if err != nil {
		return nil, err
	}
	p := &PreparedBatch{b: b, now: now, n: len(b.Indicators), upserts: upserts, revoked: revoked}
	p.b.Indicators = nil
	// The aggregates each IoC would have from this batch alone: exact for
	// IoCs not stored yet, which on a first ingestion is all of them.
	p.byKey = make(map[valKey]*aggregate, len(upserts))
	// One allocation for the batch's aggregates: the slab never grows, so
	// pointers into it stay valid.
	slab := make([]aggregate, 0, len(upserts))
	p.fresh = make([]*aggregate, 0, len(upserts))
	for i := range upserts {
		u := &upserts[i]
		a, ok := p.byKey[u.valKey]
		if ok {
			a.feedID, a.source = 0, "" // a second source: rows
			a.add(u.score, u.tags, now, now, u.expires)
		} else {
			slab = append(slab, aggregate{valKey: u.valKey})
			a = &slab[len(slab)-1]
			a.startFrom(u, now, now)
			a.feedID, a.source = b.FeedID, u.source
			p.byKey[u.valKey] = a
			p.fresh = append(p.fresh, a)
		}
		u.agg = a
	}
	for _, a := range p.fresh {
		a.seal()
	}
	// A stable order keeps PostgreSQL's row locks in one order across writers.
	slices.SortFunc(p.fresh, func(x, y *aggregate) int { return cmpValKey(x.valKey, y.valKey) })
	return p, nil
}

// Len is how many indicators the batch had.
func (p *PreparedBatch) Len() int { return p.n }

// ApplyPrepared writes a prepared batch as ApplyBatch does. A batch that
// failed may be applied again.
func (s *Store) ApplyPrepared(ctx context.Context, p *PreparedBatch) (BatchResult, error) {
	b := p.b
	var res BatchResult
	if len(p.upserts) == 0 && len(p.revoked) == 0 && b.Cursor == nil {
		return res, nil
	}
	apply := func(ctx context.Context, w batchWriter) error {
		res = BatchResult{}
		r, err := applyBatch(ctx, w, p)
		res = r
		return err
	}
	var err error
	if s.Dialect == Postgres {
		err = s.pgTx(ctx, func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(iocWriteLockID)); err != nil {
				return err
			}
			// A crash may lose the last batches committed, never part of
			// one: the cursor commits with its data, so the next run
			// resumes from what survived. Waiting for the WAL flush of every
			// batch would cost more than the batch itself.
			if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
				return err
			}
			return apply(ctx, &pgWriter{tx: tx, freshStreak: &s.pgFreshStreak})
		})
	} else {
		err = s.RunInTx(ctx, func(ctx context.Context, tx bun.Tx) error {
			return apply(ctx, &sqliteWriter{tx: tx})
		})
	}
	if err != nil {
		return BatchResult{}, fmt.Errorf("store: unable to apply a batch of %d indicators to feed %d: %w", p.n, b.FeedID, err)
	}
	return res, nil
}

// dbTime is t as both databases keep it: UTC, to the microsecond.
func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// dedupe checks the batch and merges repeated (kind, value, source): the last
// report wins, whether it stores or revokes.
func dedupe(b Batch, now int64) (upserts []pendingSighting, revoked []sightKey, err error) {
	type entry struct {
		p       pendingSighting
		revoked bool
	}
	index := make(map[sightKey]int, len(b.Indicators))
	entries := make([]entry, 0, len(b.Indicators))
	tagJSON := map[string]string{}
	for i, ind := range b.Indicators {
		if _, err := ioc.ParseKind(string(ind.Kind)); err != nil {
			return nil, nil, Invalid("indicators", "indicator %d: %v", i, err)
		}
		if ind.Value == "" || len(ind.Value) > ioc.MaxValueLen {
			return nil, nil, Invalid("indicators", "indicator %d: value is empty or longer than %d bytes", i, ioc.MaxValueLen)
		}
		if ind.Score < 0 || ind.Score > 100 {
			return nil, nil, Invalid("indicators", "indicator %d: score %d is not within 0..100", i, ind.Score)
		}
		k := sightKey{valKey{ind.Kind, ind.Value}, ind.Source}
		e := entry{revoked: ind.Revoked}
		if !ind.Revoked {
			expires := now + b.Retention.Microseconds()
			if !ind.ValidUntil.IsZero() {
				expires = micros(ind.ValidUntil)
			} else if b.Retention <= 0 {
				return nil, nil, Invalid("retention", "retention must be positive when an indicator has no expiry of its own")
			}
			if expires <= now {
				continue // expired on arrival: nothing to keep
			}
			tags := normTags(ind.Tags)
			key := strings.Join(tags, "\x00")
			js, ok := tagJSON[key]
			if !ok {
				js = jsonTags(tags)
				tagJSON[key] = js
			}
			e.p = pendingSighting{sightKey: k, score: ind.Score, tags: tags, tagJSON: js, expires: expires}
			if ind.Kind == ioc.Rule {
				// PostgreSQL's text holds neither NUL nor invalid UTF-8: a
				// broken byte must not cost the whole batch.
				e.p.text, e.p.textAt = strings.ToValidUTF8(strings.ReplaceAll(ind.Text, "\x00", ""), "\uFFFD"), i
			}
		} else {
			e.p.sightKey = k
		}
		if j, ok := index[k]; ok {
			entries[j] = e
			continue
		}
		index[k] = len(entries)
		entries = append(entries, e)
	}
	// Sized once: growing a slice of these structs, 20,000 of them a
	// batch, cost more than the rest of the loop (docs/benchmarks.md).
	upserts = make([]pendingSighting, 0, len(entries))
	for _, e := range entries {
		if e.revoked {
			revoked = append(revoked, e.p.sightKey)
		} else {
			upserts = append(upserts, e.p)
		}
	}
	return upserts, revoked, nil
}

// normTags returns tags sorted, without blanks or repeats.
func normTags(tags []string) []string {
	if len(tags) == 1 && tags[0] != "" {
		return tags
	}
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if t != "" && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

func jsonTags(tags []string) string {
	if len(tags) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(tags) // []string always encodes
	return string(b)
}

func applyBatch(ctx context.Context, w batchWriter, pb *PreparedBatch) (BatchResult, error) {
	var res BatchResult
	b, now, upserts, revoked := pb.b, pb.now, pb.upserts, pb.revoked
	// First the IoCs not stored yet, with the batch's own aggregates. On a
	// first ingestion that is every one, and what follows uses no map.
	for _, a := range pb.fresh {
		a.id = 0 // from an earlier attempt at the batch
	}
	if len(pb.fresh) > 0 || len(upserts) > 0 || len(revoked) > 0 {
		if err := stampChange(ctx, w.exec); err != nil {
			return res, err
		}
	}
	if len(pb.fresh) > 0 {
		if err := w.insertNew(ctx, pb.fresh); err != nil {
			return res, err
		}
	}
	// Then the IoCs that were stored already: read their sightings and
	// recompute from all of them.
	keys := map[ioc.Kind][]string{}
	seen := map[valKey]bool{}
	need := func(k valKey) {
		if !seen[k] {
			seen[k] = true
			keys[k.kind] = append(keys[k.kind], k.value)
		}
	}
	for i := range upserts {
		if upserts[i].agg.id == 0 {
			need(upserts[i].valKey)
		}
	}
	for _, k := range revoked {
		if a := pb.byKey[k.valKey]; a == nil || a.id == 0 {
			need(k.valKey)
		}
	}
	var stored []storedSighting
	if len(keys) > 0 {
		var err error
		if stored, err = w.sightings(ctx, keys); err != nil {
			return res, err
		}
	}
	if len(stored) > 0 {
		var err error
		if upserts, res.Rejections, err = claimRules(ctx, w, b.FeedID, now, upserts, stored); err != nil {
			return res, err
		}
	}
	var batchKeys, isRevoked map[sightKey]bool
	if len(stored) > 0 {
		batchKeys = make(map[sightKey]bool, len(upserts))
		for _, p := range upserts {
			batchKeys[p.sightKey] = true
		}
		isRevoked = make(map[sightKey]bool, len(revoked))
		for _, k := range revoked {
			isRevoked[k] = true
		}
	}
	old := map[valKey]*aggregate{}
	var oldOrder []*aggregate
	firstSeen := map[sightKey]int64{}
	var revokedHere []storedSighting
	revokedInline := 0
	for i := range stored {
		st := &stored[i]
		a, ok := old[st.valKey]
		if !ok {
			a = &aggregate{valKey: st.valKey, id: st.iocID}
			old[st.valKey] = a
			oldOrder = append(oldOrder, a)
		}
		if st.feedID == 0 {
			continue // an IoC without sightings
		}
		sk := sightKey{st.valKey, st.source}
		if st.inline {
			a.inline = st
		}
		if st.feedID == b.FeedID {
			if batchKeys[sk] {
				firstSeen[sk] = st.first
				continue
			}
			if isRevoked[sk] {
				if st.inline {
					revokedInline++ // it goes with its IoC, or is not made a row
				} else {
					revokedHere = append(revokedHere, *st)
				}
				continue
			}
		}
		if st.expires <= now {
			continue // expired, waiting for the sweeper
		}
		a.add(st.score, st.tags, st.first, st.last, st.expires)
	}
	for i := range upserts {
		p := &upserts[i]
		if p.agg.id != 0 {
			p.iocID, p.fresh, p.inline = p.agg.id, true, p.agg.feedID != 0
			res.Added++
			continue
		}
		p.fresh = false // from an earlier attempt at the batch
		a := old[p.valKey]
		if a == nil {
			return res, fmt.Errorf("indicator %s %q neither inserted nor found", p.kind, p.value)
		}
		p.iocID = a.id
		first, ok := firstSeen[p.sightKey]
		if !ok {
			first = now
			res.Added++
		}
		if in := a.inline; in == nil || in.feedID != b.FeedID || in.source != p.source {
			a.others = true
		}
		a.add(p.score, p.tags, first, now, p.expires)
	}
	var live []*aggregate
	var dead []int64
	// The inline sightings of live IoCs that gain another sighting become
	// rows, before the batch's rows join them.
	var moved []storedSighting
	for _, a := range oldOrder {
		if !a.live {
			dead = append(dead, a.id)
			continue
		}
		a.seal()
		live = append(live, a)
		if in := a.inline; in != nil {
			revoked := in.feedID == b.FeedID && isRevoked[sightKey{in.valKey, in.source}]
			if !a.others && !revoked {
				a.feedID, a.source = in.feedID, in.source // still its only one
			} else if !revoked {
				moved = append(moved, *in)
			}
		}
	}
	for i := range upserts {
		if p := &upserts[i]; !p.fresh {
			p.inline = old[p.valKey].feedID != 0
		}
	}
	slices.SortFunc(live, func(x, y *aggregate) int { return cmpValKey(x.valKey, y.valKey) })
	res.Removed = revokedInline
	if len(revokedHere) > 0 {
		n, err := w.deleteSightings(ctx, b.FeedID, revokedHere)
		if err != nil {
			return res, err
		}
		res.Removed += n
	}
	if len(dead) > 0 {
		if err := w.deleteIoCs(ctx, dead); err != nil {
			return res, err
		}
	}
	if len(live) > 0 {
		if err := w.updateIoCs(ctx, live); err != nil {
			return res, err
		}
	}
	if len(moved) > 0 {
		if err := w.insertSightings(ctx, moved); err != nil {
			return res, err
		}
	}
	if len(upserts) > 0 {
		if err := w.upsertSightings(ctx, b.FeedID, now, upserts); err != nil {
			return res, err
		}
		res.Stored = len(upserts)
		if err := writeTexts(ctx, w, b.FeedID, upserts); err != nil {
			return res, err
		}
	}
	if len(pb.fresh) > 0 || len(upserts) > 0 || res.Removed > 0 || len(dead) > 0 {
		added := int64(-len(dead))
		for _, a := range pb.fresh {
			if a.id != 0 {
				added++
			}
		}
		if err := bumpIoCStats(ctx, w.exec, added); err != nil {
			return res, err
		}
	}
	if err := finishBatch(ctx, w, b, res); err != nil {
		return res, err
	}
	return res, nil
}

// ruleText is the stored text of a rule and the feed that owns its sid (0
// for none: its feed was deleted, or it was stored before sids had owners).
type ruleText struct {
	owner     int64
	ownerName string
	text      string
}

// claimRules keeps a feed from replacing the rule of a sid another feed
// owns (docs/decisions.md, "Who owns a Suricata sid"). The feed whose text
// is stored owns the sid while it has a live sighting of it; a rule of the
// batch for a sid owned so by another feed is dropped and returned as a
// rejection, unless its text is the stored one, which only adds a sighting.
// Any other rule of the batch claims its sid (writeTexts records it). stored
// holds every sighting of the batch's stored IoCs. upserts is not changed:
// a batch that fails is applied again from it.
func claimRules(ctx context.Context, w batchWriter, feedID, now int64, upserts []pendingSighting, stored []storedSighting) ([]pendingSighting, []BatchRejection, error) {
	ids := map[valKey]int64{}
	for i := range stored {
		if stored[i].kind == ioc.Rule {
			ids[stored[i].valKey] = stored[i].iocID
		}
	}
	var claims []int64
	for i := range upserts {
		if p := &upserts[i]; p.kind == ioc.Rule && p.text != "" && ids[p.valKey] != 0 {
			claims = append(claims, ids[p.valKey])
		}
	}
	if len(claims) == 0 {
		return upserts, nil, nil
	}
	texts, feedName, err := w.ruleTexts(ctx, feedID, claims)
	if err != nil {
		return nil, nil, fmt.Errorf("rule owners: %w", err)
	}
	owned := map[int64]bool{} // by IoC id: another feed owns it and has a live sighting of it
	for i := range stored {
		st := &stored[i]
		if t, ok := texts[st.iocID]; ok && t.owner != 0 && t.owner != feedID && st.feedID == t.owner && st.expires > now {
			owned[st.iocID] = true
		}
	}
	if len(owned) == 0 {
		return upserts, nil, nil
	}
	kept := make([]pendingSighting, 0, len(upserts))
	var rejected []BatchRejection
	for _, p := range upserts {
		id := ids[p.valKey]
		if p.kind != ioc.Rule || p.text == "" || !owned[id] {
			kept = append(kept, p)
			continue
		}
		if t := texts[id]; p.text == t.text {
			p.text = "" // the owner's: it stays the owner's
			kept = append(kept, p)
			continue
		}
		rejected = append(rejected, BatchRejection{At: p.textAt, Reason: fmt.Sprintf(
			"rule %s of feed %q not stored: feed %q owns that sid and has a different rule for it",
			p.value, feedName, texts[id].ownerName)})
	}
	return kept, rejected, nil
}

// textChunkRows is how many ioc_texts rows one statement writes: three
// bound values a row, far under either database's limit on them.
const textChunkRows = 500

// writeTexts keeps the text of each Rule IoC the batch upserts: that of
// its latest indicator in the batch, and the feed as the owner of its sid
// (claimRules has dropped the rules it may not claim). The other kinds
// never get here, so their writes are as they were.
func writeTexts(ctx context.Context, w batchWriter, feedID int64, upserts []pendingSighting) error {
	var latest map[int64]*pendingSighting
	for i := range upserts {
		p := &upserts[i]
		if p.text == "" {
			continue
		}
		if latest == nil {
			latest = map[int64]*pendingSighting{}
		}
		if q := latest[p.iocID]; q == nil || q.textAt < p.textAt {
			latest[p.iocID] = p
		}
	}
	if len(latest) == 0 {
		return nil
	}
	ids := make([]int64, 0, len(latest))
	for id := range latest {
		ids = append(ids, id)
	}
	slices.Sort(ids) // one lock order on PostgreSQL
	for chunk := range slices.Chunk(ids, textChunkRows) {
		var q strings.Builder
		q.WriteString("INSERT INTO ioc_texts (ioc_id, text, feed_id) VALUES ")
		// Each placeholder once and in order: SQLite binds $n by the order
		// its names first appear.
		args := make([]any, 0, 3*len(chunk))
		for i, id := range chunk {
			if i > 0 {
				q.WriteByte(',')
			}
			fmt.Fprintf(&q, "($%d, $%d, $%d)", 3*i+1, 3*i+2, 3*i+3)
			args = append(args, id, latest[id].text, feedID)
		}
		q.WriteString(" ON CONFLICT (ioc_id) DO UPDATE SET text = excluded.text, feed_id = excluded.feed_id")
		if _, err := w.exec(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("rule texts: %w", err)
		}
	}
	return nil
}

func cmpValKey(x, y valKey) int {
	if c := strings.Compare(string(x.kind), string(y.kind)); c != 0 {
		return c
	}
	return strings.Compare(x.value, y.value)
}

// finishBatch records the feed's cursor, last ingestion and the run's count
// in the batch's transaction.
func finishBatch(ctx context.Context, w batchWriter, b Batch, res BatchResult) error {
	// One statement moves the feed's cursor and last ingestion and checks,
	// under the row's lock, that the feed is still enabled: a run going on
	// in another instance while the feed is disabled, reset or deleted
	// writes nothing more.
	var cursor any // NULL keeps the cursor
	if b.Cursor != nil {
		cursor = *b.Cursor
	}
	n, err := w.exec(ctx, `UPDATE feeds SET cursor = COALESCE($1, cursor),
		last_ingestion = CASE WHEN $2 THEN $3 ELSE last_ingestion END WHERE id = $4 AND enabled`,
		cursor, res.Stored > 0, b.Now, b.FeedID)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("feed %d: %w", b.FeedID, ErrFeedDisabled)
	}
	if b.RunID != 0 {
		// Also the check that the run still owns its feed: a run another
		// instance closed (its owner seemed gone: a lost connection, a
		// paused process) writes nothing more, so it cannot move the
		// cursor under a newer run.
		// Numbered in order of appearance: SQLite numbers $N parameters so.
		n, err := w.exec(ctx, `UPDATE feed_runs SET stored = stored + $1, added = added + $2,
			fetched = CASE WHEN fetched < $3 THEN $3 ELSE fetched END,
			rejected = CASE WHEN rejected < $4 THEN $4 ELSE rejected END
			WHERE id = $5 AND feed_id = $6 AND ended_at IS NULL`,
			int64(res.Stored), int64(res.Added), b.Fetched, b.Rejected, b.RunID, b.FeedID)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("run %d of feed %d: %w", b.RunID, b.FeedID, ErrRunClosed)
		}
	}
	return nil
}

// sightingsInKeyOrder returns rows in the order of the sightings' key,
// (ioc_id, feed_id, source) within one batch's feed, where both writers
// append them to the table and its indexes. The rows are distinct
// (dedupe), so their order changes nothing else. A batch's new IoCs have
// consecutive ids: they are counted into place, in linear time; scattered
// ids are sorted (rows itself, then).
func sightingsInKeyOrder(rows []*pendingSighting) []*pendingSighting {
	if len(rows) == 0 {
		return rows
	}
	lo, hi := rows[0].iocID, rows[0].iocID
	for _, p := range rows {
		lo, hi = min(lo, p.iocID), max(hi, p.iocID)
	}
	if hi-lo >= int64(4*len(rows)) {
		slices.SortFunc(rows, func(x, y *pendingSighting) int {
			if c := cmp.Compare(x.iocID, y.iocID); c != 0 {
				return c
			}
			return strings.Compare(x.source, y.source)
		})
		return rows
	}
	next := make([]int32, hi-lo+2) // next[id-lo]: where id's next row goes
	for _, p := range rows {
		next[p.iocID-lo+1]++
	}
	for k := 1; k < len(next); k++ {
		next[k] += next[k-1]
	}
	out := make([]*pendingSighting, len(rows))
	for _, p := range rows {
		k := p.iocID - lo
		out[next[k]] = p
		next[k]++
	}
	// The few sightings of one IoC (one per source) in source order.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j-1].iocID == out[j].iocID && out[j-1].source > out[j].source; j-- {
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}
