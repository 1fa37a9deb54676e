package store

import (
	"context"
	"database/sql"
	"time"

	"github.com/uptrace/bun"
)

// OverviewCounts is every key of the overview's counts: by type, by feed,
// by tag and by UTC day of expiry (unixDay), not only the top tags or the
// week the overview shows; and the IoCs per score, and per feed and per
// tag of each kind ("kind:feed", "kind:tag"), kept beside them.
type OverviewCounts struct {
	Types     map[string]int64
	Feeds     map[int64]int64
	Tags      map[string]int64
	Days      map[int64]int64
	Scores    map[int64]int64
	FeedKinds map[string]int64
	TagKinds  map[string]int64
}

// KeptOverviewCounts reads the counts the writers keep, rows fallen to 0
// included (there should be none).
func KeptOverviewCounts(ctx context.Context, s *Store) (OverviewCounts, error) {
	return readOverviewCounts(ctx, s, [7]string{
		"SELECT type, n FROM ioc_count_types",
		"SELECT feed_id, n FROM ioc_count_feeds",
		"SELECT tag, n FROM ioc_count_tags",
		"SELECT day, n FROM ioc_count_expiry",
		"SELECT score, n FROM ioc_count_scores",
		"SELECT type || ':' || CAST(feed_id AS TEXT), n FROM ioc_count_feed_types",
		"SELECT type || ':' || tag, n FROM ioc_count_tag_types",
	})
}

// RecountOverview counts the same from the IoCs and their sightings, with
// the scans ComputeOverview ran before the writers kept the counts: the
// oracle the kept counts must equal after every write.
func RecountOverview(ctx context.Context, s *Store) (OverviewCounts, error) {
	iocTags, tag := tagRows(s.Dialect)
	return readOverviewCounts(ctx, s, [7]string{
		"SELECT type, count(*) FROM iocs GROUP BY type",
		`SELECT feed_id, sum(n) FROM (
	SELECT feed_id, count(*) AS n FROM iocs WHERE feed_id IS NOT NULL GROUP BY feed_id
	UNION ALL SELECT feed_id, count(DISTINCT ioc_id) FROM sighting_rows GROUP BY feed_id) AS c
GROUP BY feed_id`,
		`SELECT ` + tag + `, count(*) FROM ` + iocTags + ` GROUP BY 1`,
		"SELECT expires_at / 86400000000, count(*) FROM iocs GROUP BY 1",
		"SELECT score, count(*) FROM iocs GROUP BY 1",
		`SELECT type || ':' || CAST(feed_id AS TEXT), sum(n) FROM (
	SELECT feed_id, type, count(*) AS n FROM iocs WHERE feed_id IS NOT NULL GROUP BY 1, 2
	UNION ALL SELECT s.feed_id, iocs.type, count(DISTINCT s.ioc_id) FROM sighting_rows s JOIN iocs ON iocs.id = s.ioc_id GROUP BY 1, 2) AS c
GROUP BY 1`,
		`SELECT iocs.type || ':' || ` + tag + `, count(*) FROM ` + iocTags + ` GROUP BY 1`,
	})
}

func readOverviewCounts(ctx context.Context, s *Store, queries [7]string) (OverviewCounts, error) {
	c := OverviewCounts{Types: map[string]int64{}, Feeds: map[int64]int64{}, Tags: map[string]int64{}, Days: map[int64]int64{},
		Scores: map[int64]int64{}, FeedKinds: map[string]int64{}, TagKinds: map[string]int64{}}
	db := s.readDB()
	for i, into := range [7]func(*sql.Rows) error{countsInto(c.Types), countsInto(c.Feeds), countsInto(c.Tags),
		countsInto(c.Days), countsInto(c.Scores), countsInto(c.FeedKinds), countsInto(c.TagKinds)} {
		if err := scanRows(ctx, db, queries[i], into); err != nil {
			return c, err
		}
	}
	return c, nil
}

// RecentKeysMax lets tests take the plain path of keyed pages.
var RecentKeysMax = &recentKeysMax

// RecentKeysShare lets tests make recentKeysMax the cap at any size.
var RecentKeysShare = &recentKeysShare

// DenseKind lets tests take pageByType's id-order path with few IoCs.
var DenseKind = &denseKind

// Reader is the pool s reads from outside transactions, through bun (the
// writers' pool on PostgreSQL).
func Reader(s *Store) *bun.DB { return s.reader() }

// Exporter is the pool exports read through.
func Exporter(s *Store) *bun.DB { return s.exporter() }

// SparseKeys lets tests take the walk of keyed pages with few IoCs.
var SparseKeys = &sparseKeys

// IoCWriteLockID is the PostgreSQL advisory lock the IoC writers take.
const IoCWriteLockID = iocWriteLockID

// KeysTx is the transaction the key indexer's chunks write in.
func KeysTx(s *Store, ctx context.Context, fn func(ctx context.Context, tx bun.Tx) error) error {
	return s.keysTx(ctx, fn)
}

// ExpiryZone lets tests cut a few IoCs into expiry zones: set it before a
// store's first IoC.
var ExpiryZone = &expiryZone

// ZoneKindListed lets tests list the ids of fewer IoCs of a kind in a
// zone: set it before a store's first IoC.
var ZoneKindListed = &zoneKindListed

// BetweenZonesKindsReads runs fn between the two reads of what an expiry
// range's zones hold of each kind until the end of t.
func BetweenZonesKindsReads(t interface{ Cleanup(func()) }, fn func()) {
	betweenZonesKindsReads = fn
	t.Cleanup(func() { betweenZonesKindsReads = nil })
}

// ListedRead is how many listed ids of a kind a page reads rather than
// walk the kind's values.
var ListedRead = &listedRead

// ExpiryZoneRuns returns the runs of ids, each [lo, hi], that a first page
// of f in id order (descending when desc) walks.
func ExpiryZoneRuns(ctx context.Context, s *Store, f IoCFilter, desc bool) ([][2]int64, error) {
	runs, err := s.expiryZoneRuns(ctx, f, desc, false, 0)
	out := make([][2]int64, len(runs))
	for i, r := range runs {
		out[i] = [2]int64{r.lo, r.hi}
	}
	return out, err
}

// ValueKeyForm is a value's trigram form in PostgreSQL's value keys.
var ValueKeyForm = valueKeyForm

// IndexTrigrams returns the trigrams a search for form keeps in its index
// condition on a sample of the value keys' forms (nil: all of them).
func IndexTrigrams(sample []string, form string) []string {
	var t *trigramSample
	if sample != nil {
		t = newTrigramSample(sample, time.Now())
	}
	return t.indexTrigrams(form)
}

// FeedIsDense says whether a page of the feed's IoCs probes each IoC.
func FeedIsDense(ctx context.Context, s *Store, feedID int64) (bool, error) {
	dense, _, err := s.feedIsDense(ctx, feedID)
	return dense, err
}

// SampleTrigrams takes the sample of the value keys that searches choose
// their trigrams by, as the first search would in the background.
func SampleTrigrams(ctx context.Context, s *Store) error { return s.sampleTrigrams(ctx) }

// HasTrigramSample says whether s holds a sample of the value keys.
func HasTrigramSample(s *Store) bool { return s.trigrams.current.Load() != nil }

// TrigramSampleOf is s's sample of the value keys: when it was taken and
// how many forms it has (zero time when s has none).
func TrigramSampleOf(s *Store) (taken time.Time, rows int) {
	if t := s.trigrams.current.Load(); t != nil {
		return t.taken, t.rows
	}
	return time.Time{}, 0
}

// KeepAndReadTrigramSample keeps a sample of forms in s's database and
// reads it back: the trigrams of each form it reads, in order.
func KeepAndReadTrigramSample(ctx context.Context, s *Store, forms []string) ([][]int32, error) {
	if err := s.keepTrigramSample(ctx, forms, time.Now()); err != nil {
		return nil, err
	}
	kept, err := s.keptTrigramSample(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([][]int32, kept.rows)
	for code, list := range kept.posts {
		for _, row := range list {
			rows[row] = append(rows[row], int32(code))
		}
	}
	return rows, nil
}

// SpreadWithin is spreadWithin: every k-th of forms within most bytes.
var SpreadWithin = spreadWithin

// SetMemoryAvailable has WarmCache see n bytes of memory available until
// the test ends.
func SetMemoryAvailable(t interface{ Cleanup(func()) }, n int64) {
	was := memoryAvailable
	memoryAvailable = func() (int64, error) { return n, nil }
	t.Cleanup(func() { memoryAvailable = was })
}

// KeyedStamp is keyedStamp: the key tables' stamp, and whether a keyed
// read sorts the IoCs changed since rather than falling back.
func KeyedStamp(ctx context.Context, s *Store) (int64, bool, error) {
	stamp, _, _, ok, err := s.keyedStamp(ctx)
	return stamp, ok, err
}

// ChangedSinceKeys is how many IoCs a keyed read takes to have changed
// since the keys' stamp (keyedStamp).
func ChangedSinceKeys(ctx context.Context, s *Store) (int, error) {
	_, _, changed, _, err := s.keyedStamp(ctx)
	return changed, err
}

// FillValueTail reads the IoCs after PostgreSQL's value keys into the
// searches' tail now, as a search starts it in the background.
func (s *Store) FillValueTail(ctx context.Context) error { return s.fillValueTail(ctx, false) }

// ValueTailSpan is the ids the searches' tail answers for, (lo, hi], and
// how many IoCs it holds.
func (s *Store) ValueTailSpan() (lo, hi int64, n int) {
	s.tail.mu.RLock()
	defer s.tail.mu.RUnlock()
	return s.tail.lo, s.tail.hi, len(s.tail.ids)
}

// WritesUnderWay is how many batches and sweeps of s are under way.
func WritesUnderWay(s *Store) int64 { return s.writes.Load() }

// SweepInline takes one of SweepExpired's batches: at most limit IoCs of
// feedID whose one sighting, kept in their row, expired at now.
func SweepInline(s *Store, ctx context.Context, feedID int64, now time.Time, limit int) (deleted int64, err error) {
	err = s.writeTx(ctx, func(ctx context.Context, tx bun.Tx) error {
		_, deleted, err = s.deleteInline(ctx, tx, feedID, "expires_at <= ?", limit, micros(now))
		return err
	})
	return deleted, err
}

// PrefixWays lets tests take one way only to a page of a prefix: walking
// its order, or reading its range.
func PrefixWays(walk, span bool) (restore func()) {
	saved := prefixWays
	prefixWays.walk, prefixWays.span = walk, span
	return func() { prefixWays = saved }
}

// PrefixHandOff sets how many entries a prefix's range may have to be
// read alone rather than race the walk (-1: none).
func PrefixHandOff(entries int) (restore func()) {
	saved := prefixHandOff
	prefixHandOff = entries
	return func() { prefixHandOff = saved }
}

// KindWays lets tests take one way only to each kind's IoCs in a filtered
// page in type order: walking the filter's id order, or reading the kind
// whole.
func KindWays(walk, whole bool) (restore func()) {
	saved := kindWays
	kindWays.walk, kindWays.whole = walk, whole
	return func() { kindWays = saved }
}

// ZoneWays lets tests take one way only to a page of an expiry range in an
// order the zones bound: walking the order, or reading the zones.
func ZoneWays(walk, zones bool) (restore func()) {
	saved := zoneWays
	zoneWays.walk, zoneWays.zones = walk, zones
	return func() { zoneWays = saved }
}

// SparseWays lets tests take one way only to a page of a sparse find:
// walking the page's order, or reading the keys; race sets how many keys
// past which the two race, changed how many IoCs changed since the keys
// past which the page takes one (pageOfSparse).
func SparseWays(walk, read bool, race, changed int) (restore func()) {
	saved, savedRace, savedChanged := sparseWays, sparseRaceKeys, sparseRaceChanged
	sparseWays.walk, sparseWays.read, sparseRaceKeys, sparseRaceChanged = walk, read, race, changed
	return func() { sparseWays, sparseRaceKeys, sparseRaceChanged = saved, savedRace, savedChanged }
}

// SparseWalkBudget sets how many IoCs pageOfSparseBounded's walks read at
// most in all, the walk taken whatever the keys (0: sparseWalkRows).
func SparseWalkBudget(rows int) (restore func()) {
	saved := sparseWalkBudget
	sparseWalkBudget = rows
	return func() { sparseWalkBudget = saved }
}

// SparseWalkRows is pageOfSparseBounded's budget of rows for its walks and
// whether to walk, for a page of limit IoCs among stored, keys of them
// matching.
var SparseWalkRows = sparseWalkRows
