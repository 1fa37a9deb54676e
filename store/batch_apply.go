package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/tifeeds/tifeeds/ioc"
)

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
