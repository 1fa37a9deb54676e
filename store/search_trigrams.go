package store

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// PostgreSQL's GIN index intersects the posting lists of every trigram of
// a search, and its cost is the pages of the longest: "ost-4242" at
// 10,000,000 IoCs read 1,300 pages (40 ms) for 224 matches, most of them
// the lists of "ost" and "stz", which every "host-" name holds, although
// the other four trigrams alone find the same 224 in 5 ms. The store keeps
// a sample of the value keys and leaves out of a search's index condition
// the most common trigrams whose absence adds no sampled value: the rest,
// rare together, find nearly only matches.
const (
	// trigramSampleRows is the sample's size: at 10,000,000 IoCs one
	// sampled value stands for about 330.
	trigramSampleRows = 30_000
	// trigramSampleAge is how long a sample serves before another is
	// taken; a sample of a table smaller than the sample's size (a new
	// store filling up) serves a minute.
	trigramSampleAge, smallSampleAge = time.Hour, time.Minute
	// commonTrigram is the share of sampled values above which a trigram
	// is worth leaving out of the index condition.
	commonTrigram = 0.02
	// keptTrigrams is the fewest trigrams an index condition keeps.
	keptTrigrams = 3
	// choosableTrigrams is the most trigrams a search may have for a
	// choice: the choice's work grows with their square, and with so many
	// some is rare, which GIN's own intersection follows (a search of 25
	// characters took 2.3 ms on the form alone).
	choosableTrigrams = 32
)

// trigramSample is the trigrams of a random sample of value keys: for each,
// the sampled values that hold it, ascending, at its code (trigramCode).
type trigramSample struct {
	rows  int
	posts [][]int32
	taken time.Time
}

// trigramSampler holds the store's current sample and takes the next in
// the background: a search never waits for one. Close stops it.
type trigramSampler struct {
	current atomic.Pointer[trigramSample]
	backgroundRun
}

// backgroundRun runs one piece of a store's background work at a time,
// until Close stops it.
type backgroundRun struct {
	mu     sync.Mutex
	closed bool
	cancel context.CancelFunc // of the run going on, nil when none
	done   chan struct{}      // closed when that run ends
}

// start runs work, what it does in the log's words, unless it is running.
func (t *backgroundRun) start(what string, work func(ctx context.Context) error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cancel != nil || t.closed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	done := make(chan struct{})
	t.cancel, t.done = cancel, done
	go func() {
		defer close(done)
		err := work(ctx)
		t.mu.Lock()
		t.cancel = nil
		t.mu.Unlock()
		if err != nil && ctx.Err() == nil {
			slog.Warn("store: unable to "+what, "err", err)
		}
		cancel()
	}()
}

// stop cancels the run going on and waits for it; none starts after.
func (t *backgroundRun) stop() {
	t.mu.Lock()
	t.closed = true
	cancel, done := t.cancel, t.done
	t.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// sampleWork is the sampler's work in the log's words.
const sampleWork = "sample the value keys' trigrams"

// newTrigramSample indexes the sampled value keys' forms. By the trigrams'
// codes, without a set of each form's: 29,097 forms of host names took
// 120-141 ms with maps, and a restart's first search waited on them.
func newTrigramSample(forms []string, taken time.Time) *trigramSample {
	t := &trigramSample{rows: len(forms), posts: make([][]int32, trigramCodes), taken: taken}
	var tris []string
	var codes []int
	for row, form := range forms {
		tris, codes = appendTrigrams(tris[:0], form), codes[:0]
		for _, tri := range tris {
			codes = append(codes, trigramCode(tri))
		}
		slices.Sort(codes)
		for _, code := range slices.Compact(codes) {
			t.posts[code] = append(t.posts[code], int32(row))
		}
	}
	return t
}

// list is the sampled values that hold tri, a trigram of trigrams'.
func (t *trigramSample) list(tri string) []int32 { return t.posts[trigramCode(tri)] }

// trigramCodes is how many trigrams of lowercase ASCII letters and digits
// there are: trigramCode numbers them from 0.
const trigramCodes = 36 * 36 * 36

// trigramCode is tri's number, tri being three lowercase ASCII letters or
// digits.
func trigramCode(tri string) int {
	code := 0
	for i := range 3 {
		c := int(tri[i])
		if c >= 'a' {
			c -= 'a' - 10
		} else {
			c -= '0'
		}
		code = 36*code + c
	}
	return code
}

// trigrams returns the trigrams pg_trgm makes of the letters and digits of
// form, lowercased: those of each run of ASCII letters and digits (pg_trgm
// breaks words at anything else; a form has no ASCII punctuation left).
// Runs shorter than three make none.
func trigrams(form string) []string { return appendTrigrams(nil, form) }

// appendTrigrams appends form's trigrams (trigrams) to out.
func appendTrigrams(out []string, form string) []string {
	lower := strings.ToLower(form)
	start := 0
	for i := 0; i <= len(lower); i++ {
		if i < len(lower) && isASCIIAlnum(lower[i]) {
			continue
		}
		for j := start; j+3 <= i; j++ {
			out = append(out, lower[j:j+3])
		}
		start = i + 1
	}
	return out
}

func isASCIIAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// indexTrigrams returns the trigrams of form that a search's index
// condition keeps, or nil to keep them all (no sample, a form of other
// characters, nothing worth leaving out). It leaves out the most common
// first, while at least keptTrigrams remain and the sampled values that hold
// all those kept are at most one more than hold every trigram of form.
func (t *trigramSample) indexTrigrams(form string) []string {
	if t == nil || t.rows == 0 {
		return nil
	}
	for i := 0; i < len(form); i++ {
		if !isASCIIAlnum(form[i]) {
			return nil
		}
	}
	kept := slices.Compact(slices.Sorted(slices.Values(trigrams(form))))
	if len(kept) <= keptTrigrams || len(kept) > choosableTrigrams {
		return nil
	}
	// Most common first; ties by the trigram, so that a choice repeats.
	slices.SortFunc(kept, func(a, b string) int {
		if n := len(t.list(b)) - len(t.list(a)); n != 0 {
			return n
		}
		return strings.Compare(a, b)
	})
	bound := t.holding(kept, t.rows) + 1
	dropped := false
	for len(kept) > keptTrigrams && float64(len(t.list(kept[0]))) >= commonTrigram*float64(t.rows) {
		if t.holding(kept[1:], bound) > bound {
			break
		}
		kept, dropped = kept[1:], true
	}
	if !dropped {
		return nil
	}
	slices.Sort(kept)
	return kept
}

// holding counts the sampled values that hold every one of tris, up to
// one more than most.
func (t *trigramSample) holding(tris []string, most int) int {
	lists := make([][]int32, 0, len(tris))
	for _, tri := range tris {
		lists = append(lists, t.list(tri))
	}
	slices.SortFunc(lists, func(a, b []int32) int { return len(a) - len(b) })
	n := 0
	for _, row := range lists[0] {
		all := true
		for _, l := range lists[1:] {
			if _, found := slices.BinarySearch(l, row); !found {
				all = false
				break
			}
		}
		if all {
			if n++; n > most {
				break
			}
		}
	}
	return n
}

// searchTrigrams returns the store's current sample (nil before the first)
// and, when it is missing or old, starts taking the next.
func (s *Store) searchTrigrams() *trigramSample {
	current := s.trigrams.current.Load()
	if current.fresh(time.Now()) {
		return current
	}
	s.trigrams.start(sampleWork, s.sampleTrigrams)
	return current
}

// fresh says whether the sample still serves at now: for trigramSampleAge,
// or smallSampleAge when it is of a table smaller than the sample's size.
func (t *trigramSample) fresh(now time.Time) bool {
	if t == nil {
		return false
	}
	age := now.Sub(t.taken)
	return age < smallSampleAge || t.rows >= trigramSampleRows/2 && age < trigramSampleAge
}

// StartSearchSample starts setting, in the background, the sample of the
// value keys that searches choose their trigrams by, which the first
// search would otherwise start: tifeeds serve calls it before its first
// request, so that a search right after a restart does not go without one
// (at 10,000,000 IoCs the bench's search took 30 ms without a sample, 5 ms
// with). The sample kept in the database serves at once when fresh (one
// row); taking one takes 0.1-0.3 s. Nothing on SQLite.
func (s *Store) StartSearchSample() {
	if s.Dialect == Postgres {
		s.trigrams.start(sampleWork, s.sampleTrigrams)
	}
}

// sampleTrigrams sets the store's sample on PostgreSQL: the one kept in
// the database when it is fresh (this process's before it restarted, or
// another instance's), else a new one, which it keeps there for them. A
// store with none yet serves with the kept one, however old, until the
// new one is taken: the values' trigrams change slowly, and a search
// without a sample reads every trigram's posting list.
func (s *Store) sampleTrigrams(ctx context.Context) error {
	if s.Dialect != Postgres {
		return nil
	}
	kept, err := s.keptTrigramSample(ctx)
	if err != nil {
		return err
	}
	fresh := kept.fresh(time.Now())
	if fresh || kept != nil && s.trigrams.current.Load() == nil {
		s.trigrams.current.Store(kept)
	}
	if fresh {
		return nil
	}
	forms, err := s.sampleValueKeys(ctx)
	if err != nil {
		return err
	}
	// In PostgreSQL's precision, so that the kept sample is this one.
	sample := newTrigramSample(forms, time.Now().Truncate(time.Microsecond))
	// Kept first, so that whoever sees it serving finds it kept; it serves
	// this process whether or not it could be kept.
	err = s.keepTrigramSample(ctx, forms, sample.taken)
	s.trigrams.current.Store(sample)
	return err
}

// trigramSampleBytes bounds the bytes of a sample's forms, in memory and
// kept, and trigramFormChars each form's characters: every value key is
// sampled alike however long, and 60,000 URLs of some kilobytes each would
// take hundreds of megabytes. Host names and hashes take 1-2 MB.
const trigramSampleBytes, trigramFormChars = 4 << 20, 512

// sampleValueKeys takes a sample of PostgreSQL's value keys: about
// trigramSampleRows of them, from random pages (TABLESAMPLE SYSTEM, which
// reads only those), and of those evenly spread ones up to
// trigramSampleBytes.
func (s *Store) sampleValueKeys(ctx context.Context) ([]string, error) {
	var estimate float64
	if err := s.reader().NewRaw("SELECT reltuples FROM pg_class WHERE relname = 'ioc_value_keys'").Scan(ctx, &estimate); err != nil {
		return nil, err
	}
	percent := 100.0
	if estimate > 0 {
		percent = min(100, 100*trigramSampleRows/estimate)
	}
	var forms []string
	// LIMIT only bounds the rows: it would keep the table's first pages.
	if err := s.reader().NewRaw("SELECT left(value, ?) FROM ioc_value_keys TABLESAMPLE SYSTEM (?) LIMIT ?", trigramFormChars, percent, 2*trigramSampleRows).
		Scan(ctx, &forms); err != nil {
		return nil, err
	}
	return spreadWithin(forms, trigramSampleBytes), nil
}

// spreadWithin returns every k-th of forms, the fewest k that keeps their
// bytes within most (the rows come in the table's order: the first alone
// would be its first pages').
func spreadWithin(forms []string, most int) []string {
	total := 0
	for _, f := range forms {
		total += len(f)
	}
	if total <= most {
		return forms
	}
	for every := (total + most - 1) / most; ; every++ {
		var kept []string
		bytes := 0
		for i := 0; i < len(forms); i += every {
			kept, bytes = append(kept, forms[i]), bytes+len(forms[i])
		}
		if bytes <= most {
			return kept
		}
	}
}

// keptTrigramSample is the sample kept in the database; nil when none is.
func (s *Store) keptTrigramSample(ctx context.Context) (*trigramSample, error) {
	var (
		taken time.Time
		forms string
	)
	err := s.reader().QueryRowContext(ctx, "SELECT taken, forms FROM search_trigram_sample WHERE id = 1").Scan(&taken, &forms)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	return newTrigramSample(strings.Split(forms, "\n"), taken), nil
}

// keepTrigramSample keeps a sample's forms, taken at taken, in the
// database in place of the last: one text, a line a form, a form's own
// line breaks made spaces (a trigram is of letters and digits, and either
// breaks it). Split, they took a tenth of the time of a JSON array's
// decoding.
func (s *Store) keepTrigramSample(ctx context.Context, forms []string, taken time.Time) error {
	lines := make([]string, len(forms))
	for i, form := range forms {
		lines[i] = strings.ReplaceAll(form, "\n", " ")
	}
	_, err := s.DB.ExecContext(ctx, `INSERT INTO search_trigram_sample (id, taken, forms) VALUES (1, ?, ?)
ON CONFLICT (id) DO UPDATE SET taken = EXCLUDED.taken, forms = EXCLUDED.forms`, taken, strings.Join(lines, "\n"))
	return err
}
