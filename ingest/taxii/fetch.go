package taxii

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// MaxBackfillDays is the spec's upper limit on backfill days.
const MaxBackfillDays = 30

// maxStalledPages is how many pages in a row may say "more" without
// progress (no object not seen before in this fetch, and an
// X-TAXII-Date-Added-Last that does not move past the cursor) before the
// server is taken to be paging in a loop.
const maxStalledPages = 3

// cursorLayout formats the cursors this package makes itself. TAXII
// timestamps are RFC 3339 in UTC; millisecond precision is what most servers
// parse (some reject nanoseconds).
const cursorLayout = "2006-01-02T15:04:05.000Z"

// ErrPagingLoop is the reason of a fetch stopped because the server kept
// paging without progress.
var ErrPagingLoop = errors.New("server pages in a loop")

// ErrRunCapped ends a fetch that stopped at one of the client's per-run
// bounds (MaxPages, MaxObjects, MaxRunTime) while the server had more. It is
// not a failure: everything up to the returned cursor was checkpointed, and
// the next fetch goes on from there.
var ErrRunCapped = errors.New("taxii: stopped at the per-run cap")

// BackfillSince returns the oldest date a first run or a run after
// re-enabling fetches: now minus backfillDays, clamped to 0..MaxBackfillDays.
func BackfillSince(now time.Time, backfillDays int) time.Time {
	return now.UTC().AddDate(0, 0, -max(0, min(backfillDays, MaxBackfillDays)))
}

// AddedAfter returns the added_after a run asks for: the stored cursor, or
// since (the backfill bound) when that is later, or when the cursor is empty
// or unparsable. A zero since leaves the cursor as it is. Cursors this
// package makes are RFC 3339 UTC with milliseconds; cursors taken from the
// server's X-TAXII-Date-Added-Last are kept verbatim.
func AddedAfter(cursor string, since time.Time) string {
	if since.IsZero() {
		return cursor
	}
	if t, err := parseTimestamp(cursor); err == nil && !t.Before(since) {
		return cursor
	}
	return since.UTC().Format(cursorLayout)
}

func parseTimestamp(s string) (time.Time, error) {
	return time.Parse(time.RFC3339Nano, s)
}

// Fetch reads the objects of a collection added after the cursor addedAfter
// (an RFC 3339 timestamp as AddedAfter or a previous Fetch returned; empty
// means the whole collection) and hands their indicators to sink, page by
// page. After each page that carried objects it calls sink.Checkpoint with
// the newest X-TAXII-Date-Added-Last received (never with object dates; the
// cursor stays put on a page without the header), so a failed run loses at
// most the page in flight, which the next run fetches again. It returns the
// last checkpointed cursor, which is addedAfter when nothing new came. The
// cursor is the header's text, verbatim.
//
// Paging follows TAXII 2.1: every request of a walk keeps the walk's
// added_after and limit and adds the previous page's next; a server that
// says more without a next is asked again with added_after set to the last
// X-TAXII-Date-Added-Last. A next may name a server-side session and be the
// same on every page (the OASIS reference server does so), so a repeated
// next is no sign of a loop; pages without progress are (see
// maxStalledPages), and stop the fetch with Fetching Data Error wrapping
// ErrPagingLoop. Such a session expires, and re-sending its next would skip
// a page: a refused next (400, 404, 410, 422) is never sent again, the walk
// restarts instead from the cursor, once per cursor (a second refusal with
// no page stored since fails the fetch).
//
// A fetch is bounded by MaxPages, MaxObjects and MaxRunTime: past one of
// them it stops after the page in hand and returns its cursor with an error
// wrapping ErrRunCapped. Each answer is bounded by MaxPageBytes, and each
// JSON value in it by MaxValueBytes (Fetching Data Error).
//
// Unusable objects are reported with sink.Rejected, the position being the
// object's number in this fetch (1-based). Errors are ioc.FetchError with the
// spec's kinds, the sink's own errors as they are, and ctx's on cancellation.
func (c *Client) Fetch(ctx context.Context, collectionURL, addedAfter string, sink source.Sink) (string, error) {
	cursor := addedAfter
	cu, err := ParseCollectionURL(collectionURL)
	if err != nil {
		return cursor, err
	}
	var cursorTime time.Time
	if cursor != "" {
		if cursorTime, err = parseTimestamp(cursor); err != nil {
			return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("taxii: cursor %q is not an RFC 3339 timestamp: %w", cursor, err))
		}
	}
	col, err := c.collection(ctx, cu)
	if err != nil {
		return cursor, err
	}
	source := col.Title
	if source == "" {
		source = cu.ID
	}
	x := &extractor{source: source, now: c.now(), normalize: c.normalize()}

	var (
		start         = c.now()
		position      int64 // objects read, for rejection positions and MaxObjects
		pages         int
		next          string
		stalled       int
		seen          = make(map[uint64]struct{})
		after         = addedAfter // the added_after of this walk's requests
		restarted     bool
		restartCursor string // the cursor the last restart went back to
	)
	for {
		q := url.Values{"limit": {strconv.Itoa(c.pageSize())}}
		if after != "" {
			q.Set("added_after", after)
		}
		if next != "" {
			q.Set("next", next)
		}
		info, last, fresh, err := c.page(ctx, cu.objectsURL()+"?"+q.Encode(), x, &position, seen, sink)
		if err != nil {
			var refused *answerError
			if next == "" || !errors.As(err, &refused) || !refusedNext(refused.status) {
				return cursor, err
			}
			if restarted && restartCursor == cursor {
				return cursor, fmt.Errorf("taxii: next refused again with no page stored since the walk restarted from %q: %w", cursor, err)
			}
			// The session behind next is gone (expired, typically); asking
			// again with it would fail or skip a page. Everything up to
			// cursor is checkpointed: a new walk from there loses nothing.
			restarted, restartCursor = true, cursor
			after, next, stalled = cursor, "", 0
			continue
		}
		pages++
		advanced := false
		if last != "" {
			t, err := parseTimestamp(last)
			if err != nil {
				return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("taxii: X-TAXII-Date-Added-Last %q is not an RFC 3339 timestamp", last))
			}
			// Objects come in date_added order, so the header only grows;
			// a server that says otherwise must not move the cursor back.
			if cursor == "" || t.After(cursorTime) {
				cursor, cursorTime, advanced = last, t, true
			}
		}
		if info.Objects > 0 || last != "" {
			if err := sink.Checkpoint(ctx, cursor); err != nil {
				return cursor, fmt.Errorf("taxii: unable to checkpoint at %s: %w", cursor, err)
			}
		}
		if !info.More {
			return cursor, nil
		}
		if fresh == 0 && !advanced {
			if stalled++; stalled >= maxStalledPages {
				return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("taxii: %d pages in a row with more=true, no new object and no later X-TAXII-Date-Added-Last: %w", stalled, ErrPagingLoop))
			}
		} else {
			stalled = 0
		}
		if reason := c.capReached(pages, position, c.now().Sub(start)); reason != "" {
			return cursor, fmt.Errorf("%w of %s; the next run goes on from the cursor", ErrRunCapped, reason)
		}
		switch {
		case info.Next != "":
			next = info.Next
		default:
			// more without next: TAXII 2.1 says page on by added_after set
			// to the X-TAXII-Date-Added-Last just received.
			if last == "" {
				return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("taxii: more=true without next or X-TAXII-Date-Added-Last: %w", ErrPagingLoop))
			}
			if after != "" {
				prev, _ := parseTimestamp(after)
				if lt, _ := parseTimestamp(last); !lt.After(prev) {
					return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("taxii: X-TAXII-Date-Added-Last %s does not move past added_after %s: %w", last, after, ErrPagingLoop))
				}
			}
			after, next = last, ""
		}
	}
}

// refusedNext reports whether an answer to a request with next says the
// token is no longer good. The OASIS reference server answers 400; others
// 404, 410 or 422. A collection that is really gone fails the restarted
// walk's first request, which carries no next.
func refusedNext(status int) bool {
	switch status {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusGone, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// capReached names the per-run bound a fetch has reached, or returns "".
func (c *Client) capReached(pages int, objects int64, elapsed time.Duration) string {
	switch maxPages, maxObjects, maxTime := orDefault(c.MaxPages, DefaultMaxPages),
		orDefault(c.MaxObjects, DefaultMaxObjects), orDefault(c.MaxRunTime, DefaultMaxRunTime); {
	case pages >= maxPages:
		return fmt.Sprintf("%d pages", maxPages)
	case objects >= maxObjects:
		return fmt.Sprintf("%d objects", maxObjects)
	case elapsed >= maxTime:
		return maxTime.String()
	}
	return ""
}

// page gets one objects page and streams its envelope into the extractor.
// It returns the envelope's more/next/count, the page's
// X-TAXII-Date-Added-Last header, and how many of its objects were not in
// seen (which it updates) before.
func (c *Client) page(ctx context.Context, u string, x *extractor, position *int64, seen map[uint64]struct{}, sink source.Sink) (envelopeInfo, string, int, error) {
	resp, err := c.get(ctx, u, ioc.InvalidCollectionURL)
	if err != nil {
		return envelopeInfo{}, "", 0, err
	}
	defer drain(resp)
	last := resp.Header.Get("X-TAXII-Date-Added-Last")
	b, err := openBody(resp, c.maxPageBytes())
	if err != nil {
		return envelopeInfo{}, "", 0, err
	}
	var (
		sinkErr error
		fresh   int
	)
	info, err := decodeEnvelope(b.out, c.maxValueBytes(), func(o *stixObject, decodeErr error) error {
		*position++
		if o != nil && o.ID != "" && len(seen) < int(orDefault(c.MaxObjects, DefaultMaxObjects)) {
			if k := objectKey(o); !has(seen, k) {
				seen[k] = struct{}{}
				fresh++
			}
		}
		if err := x.decoded(ctx, *position, o, decodeErr, sink); err != nil {
			sinkErr = err
			return err
		}
		return nil
	})
	switch {
	case sinkErr != nil:
		return info, "", fresh, fmt.Errorf("taxii: unable to hand over object %d: %w", *position, sinkErr)
	case ctx.Err() != nil:
		return info, "", fresh, fmt.Errorf("taxii: unable to read %s: %w", withoutQuery(u), ctx.Err())
	case errors.Is(err, errValueTooLarge):
		return info, "", fresh, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("taxii: page of %s: %w", withoutQuery(u), err))
	case err != nil:
		return info, "", fresh, b.failure(err, fmt.Errorf("taxii: unable to decode a page of %s: %w", withoutQuery(u), err))
	}
	return info, last, fresh, nil
}

func has(m map[uint64]struct{}, k uint64) bool {
	_, ok := m[k]
	return ok
}

// objectKey identifies one version of a STIX object in little memory.
func objectKey(o *stixObject) uint64 {
	h := fnv.New64a()
	h.Write([]byte(o.ID))
	h.Write([]byte{0})
	h.Write([]byte(o.Modified))
	return h.Sum64()
}
