package store

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tifeeds/tifeeds/ioc"
)

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
