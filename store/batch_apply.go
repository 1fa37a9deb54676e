package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tifeeds/tifeeds/ioc"
)

// batchApply is one attempt at writing a prepared batch: what it read of
// the stored IoCs the batch touches and what it writes back. A batch that
// failed is applied again from its PreparedBatch, so a batchApply never
// changes pb's slices, only the sightings in them, which every step resets.
type batchApply struct {
	w         batchWriter
	pb        *PreparedBatch
	b         Batch
	now       int64
	upserts   []pendingSighting // pb.upserts, less the rules claimRules refused
	res       BatchResult
	stored    []storedSighting // every sighting of the batch's stored IoCs
	isRevoked map[sightKey]bool

	// Recounted from the stored sightings, then the batch's (recount, addBatch).
	old           map[valKey]*aggregate
	oldOrder      []*aggregate
	firstSeen     map[sightKey]int64 // the batch's sightings the feed had already
	revokedHere   []storedSighting   // rows the batch revokes
	revokedInline int                // inline sightings the batch revokes

	// What settle decides to write.
	live  []*aggregate
	dead  []int64
	moved []storedSighting
}

// applyBatch writes pb in the transaction w writes in: first the IoCs not
// stored yet, with the batch's own aggregates (on a first ingestion that is
// every one, and what follows uses no map); then the IoCs stored already,
// whose aggregates are recomputed from all their sightings.
func applyBatch(ctx context.Context, w batchWriter, pb *PreparedBatch) (BatchResult, error) {
	ap := &batchApply{w: w, pb: pb, b: pb.b, now: pb.now, upserts: pb.upserts}
	if err := ap.insertFresh(ctx); err != nil {
		return ap.res, err
	}
	if err := ap.readStored(ctx); err != nil {
		return ap.res, err
	}
	ap.recount()
	if err := ap.addBatch(); err != nil {
		return ap.res, err
	}
	ap.settle()
	if err := ap.write(ctx); err != nil {
		return ap.res, err
	}
	if err := widenZonesOf(ctx, w.exec, ap.pb.fresh, ap.live); err != nil {
		return ap.res, err
	}
	if err := finishBatch(ctx, w, ap.b, ap.res); err != nil {
		return ap.res, err
	}
	if err := writeWatched(ctx, w, ap.b, ap.now); err != nil {
		return ap.res, err
	}
	return ap.res, nil
}

// watchedChunk is how many pending asset sightings one statement inserts.
const watchedChunk = 100

// writeWatched writes the batch's indicators that cover an asset to
// asset_sightings_pending, with the batch: the asset watch records their
// hits from there, so a crash after the commit loses none. Few indicators
// cover an asset; most batches write nothing here.
func writeWatched(ctx context.Context, w batchWriter, b Batch, now int64) error {
	var sb strings.Builder
	args := make([]any, 0, 7*min(len(b.Watched), watchedChunk))
	for start := 0; start < len(b.Watched); start += watchedChunk {
		sb.Reset()
		args = args[:0]
		sb.WriteString("INSERT INTO asset_sightings_pending (feed_id, kind, value, score, tags, at, expires_at) VALUES ")
		for _, ind := range b.Watched[start:min(start+watchedChunk, len(b.Watched))] {
			expires := now + b.Retention.Microseconds()
			if !ind.ValidUntil.IsZero() {
				expires = micros(ind.ValidUntil)
			}
			if ind.Revoked || expires <= now {
				continue
			}
			if len(args) > 0 {
				sb.WriteString(", ")
			}
			n := len(args)
			// Numbered in order of appearance, as SQLite requires.
			fmt.Fprintf(&sb, "($%d, $%d, $%d, $%d, $%d, $%d, $%d)", n+1, n+2, n+3, n+4, n+5, n+6, n+7)
			args = append(args, b.FeedID, string(ind.Kind), ind.Value, int64(ind.Score), jsonTags(normTags(ind.Tags)), now, expires)
		}
		if len(args) == 0 {
			continue
		}
		if _, err := w.exec(ctx, sb.String(), args...); err != nil {
			return fmt.Errorf("asset sightings: %w", err)
		}
	}
	return nil
}

// insertFresh stamps the change and inserts the IoCs not stored yet; those
// that were (another writer, an earlier batch) keep id 0 for readStored.
func (ap *batchApply) insertFresh(ctx context.Context) error {
	pb := ap.pb
	for _, a := range pb.fresh {
		a.id = 0 // from an earlier attempt at the batch
	}
	if len(pb.fresh) > 0 || len(ap.upserts) > 0 || len(pb.revoked) > 0 {
		if err := stampChange(ctx, ap.w.exec); err != nil {
			return err
		}
	}
	if len(pb.fresh) > 0 {
		if err := ap.w.insertNew(ctx, pb.fresh); err != nil {
			return err
		}
	}
	return nil
}

// readStored reads every sighting of the stored IoCs the batch reports or
// revokes, and drops the batch's rules whose sid another feed owns.
func (ap *batchApply) readStored(ctx context.Context) error {
	keys := map[ioc.Kind][]string{}
	seen := map[valKey]bool{}
	need := func(k valKey) {
		if !seen[k] {
			seen[k] = true
			keys[k.kind] = append(keys[k.kind], k.value)
		}
	}
	for i := range ap.upserts {
		if ap.upserts[i].agg.id == 0 {
			need(ap.upserts[i].valKey)
		}
	}
	for _, k := range ap.pb.revoked {
		if a := ap.pb.byKey[k.valKey]; a == nil || a.id == 0 {
			need(k.valKey)
		}
	}
	if len(keys) > 0 {
		var err error
		if ap.stored, err = ap.w.sightings(ctx, keys); err != nil {
			return err
		}
	}
	if len(ap.stored) > 0 {
		var err error
		if ap.upserts, ap.res.Rejections, err = claimRules(ctx, ap.w, ap.b.FeedID, ap.now, ap.upserts, ap.stored); err != nil {
			return err
		}
	}
	return nil
}

// recount aggregates the stored sightings that stay: not the feed's that
// the batch reports again (it replaces them, keeping when they were first
// seen) or revokes, and none expired.
func (ap *batchApply) recount() {
	var batchKeys map[sightKey]bool
	if len(ap.stored) > 0 {
		batchKeys = make(map[sightKey]bool, len(ap.upserts))
		for _, p := range ap.upserts {
			batchKeys[p.sightKey] = true
		}
		ap.isRevoked = make(map[sightKey]bool, len(ap.pb.revoked))
		for _, k := range ap.pb.revoked {
			ap.isRevoked[k] = true
		}
	}
	ap.old = map[valKey]*aggregate{}
	ap.firstSeen = map[sightKey]int64{}
	for i := range ap.stored {
		st := &ap.stored[i]
		a, ok := ap.old[st.valKey]
		if !ok {
			a = &aggregate{valKey: st.valKey, id: st.iocID}
			ap.old[st.valKey] = a
			ap.oldOrder = append(ap.oldOrder, a)
		}
		if st.feedID == 0 {
			continue // an IoC without sightings
		}
		sk := sightKey{st.valKey, st.source}
		if st.inline {
			a.inline = st
		}
		if st.feedID == ap.b.FeedID {
			if batchKeys[sk] {
				ap.firstSeen[sk] = st.first
				continue
			}
			if ap.isRevoked[sk] {
				if st.inline {
					ap.revokedInline++ // it goes with its IoC, or is not made a row
				} else {
					ap.revokedHere = append(ap.revokedHere, *st)
				}
				continue
			}
		}
		if st.expires <= ap.now {
			continue // expired, waiting for the sweeper
		}
		a.add(st.score, st.tags, st.first, st.last, st.expires)
	}
}

// addBatch gives each of the batch's sightings its IoC's id and adds it to
// the stored IoC's aggregate, counting the sightings new to the feed.
func (ap *batchApply) addBatch() error {
	for i := range ap.upserts {
		p := &ap.upserts[i]
		if p.agg.id != 0 {
			p.iocID, p.fresh, p.inline = p.agg.id, true, p.agg.feedID != 0
			ap.res.Added++
			continue
		}
		p.fresh = false // from an earlier attempt at the batch
		a := ap.old[p.valKey]
		if a == nil {
			return fmt.Errorf("indicator %s %q neither inserted nor found", p.kind, p.value)
		}
		p.iocID = a.id
		first, ok := ap.firstSeen[p.sightKey]
		if !ok {
			first = ap.now
			ap.res.Added++
		}
		if in := a.inline; in == nil || in.feedID != ap.b.FeedID || in.source != p.source {
			a.others = true
		}
		a.add(p.score, p.tags, first, ap.now, p.expires)
	}
	return nil
}

// settle sorts the stored IoCs into those left without a live sighting
// (dead) and the live ones, and decides where each live one's sightings
// go: an IoC left with its one inline sighting keeps it in its row; the
// inline sightings of IoCs that gain another become rows (moved), before
// the batch's rows join them.
func (ap *batchApply) settle() {
	for _, a := range ap.oldOrder {
		if !a.live {
			ap.dead = append(ap.dead, a.id)
			continue
		}
		a.seal()
		ap.live = append(ap.live, a)
		if in := a.inline; in != nil {
			revoked := in.feedID == ap.b.FeedID && ap.isRevoked[sightKey{in.valKey, in.source}]
			if !a.others && !revoked {
				a.feedID, a.source = in.feedID, in.source // still its only one
			} else if !revoked {
				ap.moved = append(ap.moved, *in)
			}
		}
	}
	for i := range ap.upserts {
		if p := &ap.upserts[i]; !p.fresh {
			p.inline = ap.old[p.valKey].feedID != 0
		}
	}
	slices.SortFunc(ap.live, func(x, y *aggregate) int { return cmpValKey(x.valKey, y.valKey) })
}

// write deletes the revoked sightings and the dead IoCs, updates the live
// ones, writes the moved and the batch's sightings and the rules' texts,
// and counts the IoCs added or removed.
func (ap *batchApply) write(ctx context.Context) error {
	w, feedID := ap.w, ap.b.FeedID
	ap.res.Removed = ap.revokedInline
	if len(ap.revokedHere) > 0 {
		n, err := w.deleteSightings(ctx, feedID, ap.revokedHere)
		if err != nil {
			return err
		}
		ap.res.Removed += n
	}
	if len(ap.dead) > 0 {
		if err := w.deleteIoCs(ctx, ap.dead); err != nil {
			return err
		}
	}
	if len(ap.live) > 0 {
		if err := w.updateIoCs(ctx, ap.live); err != nil {
			return err
		}
	}
	if len(ap.moved) > 0 {
		if err := w.insertSightings(ctx, ap.moved); err != nil {
			return err
		}
	}
	if len(ap.upserts) > 0 {
		if err := w.upsertSightings(ctx, feedID, ap.now, ap.upserts); err != nil {
			return err
		}
		ap.res.Stored = len(ap.upserts)
		if err := writeTexts(ctx, w, feedID, ap.upserts); err != nil {
			return err
		}
	}
	// Whatever the batch wrote: rewriting a stored IoC's aggregate drops
	// the tags of its sightings expired since, even when nothing else moved.
	d, err := ap.overviewDelta()
	if err != nil {
		return err
	}
	if err := d.flush(ctx, w.exec); err != nil {
		return err
	}
	if len(ap.pb.fresh) > 0 || len(ap.upserts) > 0 || ap.res.Removed > 0 || len(ap.dead) > 0 {
		added := int64(-len(ap.dead))
		for _, a := range ap.pb.fresh {
			if a.id != 0 {
				added++
			}
		}
		if err := bumpIoCStats(ctx, w.exec, added); err != nil {
			return err
		}
	}
	return nil
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

// overviewDelta is what the batch changed of the overview counts, from what
// it knows without another read: its new IoCs count for their type, tags,
// expiry day and the feed; a stored IoC it touched counted for its row as
// read (iocTags, iocExpires) and the feeds of its sightings, and counts now,
// unless dead, for its aggregate and the feeds of the sightings left. A
// batch writes its own feed's sightings only (an inline sighting that
// becomes a row keeps its feed), so of a live IoC's feeds only the batch's
// can come or go.
func (ap *batchApply) overviewDelta() (*overviewDelta, error) {
	d := newOverviewDelta()
	feedID := ap.b.FeedID
	for _, a := range ap.pb.fresh {
		if a.id != 0 {
			d.addIoC(string(a.kind), a.score, a.tagJSON, a.tags, a.expires, 1)
			d.addFeed(feedID, string(a.kind), 1)
		}
	}
	if len(ap.stored) == 0 {
		return d, nil
	}
	const (
		counted    = 1 << iota
		feedBefore // a sighting of the batch's feed before the batch
		feedAfter  // and after it
	)
	state := make(map[int64]uint8, len(ap.oldOrder))
	kinds := make(map[int64]ioc.Kind, len(ap.oldOrder))
	var deadFeeds map[[2]int64]ioc.Kind // (IoC, feed) of the dead IoCs
	cache := map[string]tagSet{}
	for i := range ap.stored {
		st := &ap.stored[i]
		a := ap.old[st.valKey]
		f := state[st.iocID]
		kinds[st.iocID] = st.kind
		if f&counted == 0 {
			f |= counted
			old, err := storedTags(cache, st.iocTags)
			if err != nil {
				return nil, err
			}
			// A re-sighting mostly keeps its IoC's score, tags and expiry day.
			if !a.live || st.iocScore != a.score || old.json != a.tagJSON || st.iocExpires/dayMicros != a.expires/dayMicros {
				d.addIoC(string(st.kind), st.iocScore, old.json, old.tags, st.iocExpires, -1)
				if a.live {
					d.addIoC(string(a.kind), a.score, a.tagJSON, a.tags, a.expires, 1)
				}
			}
		}
		switch {
		case st.feedID == 0:
		case !a.live:
			if deadFeeds == nil {
				deadFeeds = map[[2]int64]ioc.Kind{}
			}
			deadFeeds[[2]int64{st.iocID, st.feedID}] = st.kind
		case st.feedID == feedID:
			f |= feedBefore
			if !ap.isRevoked[sightKey{st.valKey, st.source}] {
				f |= feedAfter
			}
		}
		state[st.iocID] = f
	}
	for k, kind := range deadFeeds {
		d.addFeed(k[1], string(kind), -1)
	}
	for i := range ap.upserts {
		if p := &ap.upserts[i]; !p.fresh {
			state[p.iocID] |= feedAfter
			kinds[p.iocID] = p.kind
		}
	}
	for id, f := range state {
		switch f & (feedBefore | feedAfter) {
		case feedBefore:
			d.addFeed(feedID, string(kinds[id]), -1)
		case feedAfter:
			d.addFeed(feedID, string(kinds[id]), 1)
		}
	}
	return d, nil
}
