package taxii

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
)

// MaxBackfillDays is the spec's upper limit on backfill days.
const MaxBackfillDays = 30

// maxEmptyPages is how many pages in a row may say "more" without carrying
// any object before the server is taken to be paging in a loop.
const maxEmptyPages = 3

// maxPageBytes bounds one page's body; a larger page is a Fetching Data Error.
const maxPageBytes = 512 << 20

// cursorLayout formats the cursors this package makes itself. TAXII
// timestamps are RFC 3339 in UTC; millisecond precision is what most servers
// parse (some reject nanoseconds).
const cursorLayout = "2006-01-02T15:04:05.000Z"

// ErrPagingLoop is the reason of a fetch stopped because the server kept
// paging without progress.
var ErrPagingLoop = errors.New("server pages in a loop")

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
// Paging follows TAXII 2.1: every request keeps the run's added_after and
// adds the previous page's next; a server that says more without a next is
// asked again with added_after set to the last X-TAXII-Date-Added-Last. A
// server that repeats a next token, or pages without progress, stops the
// fetch with Fetching Data Error (wrapping ErrPagingLoop).
//
// Unusable objects are reported with sink.Rejected, the position being the
// object's number in this fetch (1-based). Errors are ioc.FetchError with the
// spec's kinds, the sink's own errors as they are, and ctx's on cancellation.
func (c *Client) Fetch(ctx context.Context, collectionURL, addedAfter string, sink ioc.Sink) (string, error) {
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
		position  int64
		next      string
		seenNext  = make(map[string]bool)
		emptyRuns int
		after     = addedAfter // the added_after of this run's requests
	)
	for {
		q := url.Values{"limit": {strconv.Itoa(c.pageSize())}}
		if after != "" {
			q.Set("added_after", after)
		}
		if next != "" {
			q.Set("next", next)
		}
		info, last, err := c.page(ctx, cu.objectsURL()+"?"+q.Encode(), x, &position, sink)
		if err != nil {
			return cursor, err
		}
		if last != "" {
			t, err := parseTimestamp(last)
			if err != nil {
				return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("taxii: X-TAXII-Date-Added-Last %q is not an RFC 3339 timestamp", last))
			}
			// Objects come in date_added order, so the header only grows;
			// a server that says otherwise must not move the cursor back.
			if cursor == "" || t.After(cursorTime) {
				cursor, cursorTime = last, t
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
		if info.Objects == 0 {
			if emptyRuns++; emptyRuns >= maxEmptyPages {
				return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("taxii: %d pages in a row with more=true and no object: %w", emptyRuns, ErrPagingLoop))
			}
		} else {
			emptyRuns = 0
		}
		switch {
		case info.Next != "":
			if seenNext[info.Next] {
				return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("taxii: next %q was already followed: %w", info.Next, ErrPagingLoop))
			}
			seenNext[info.Next] = true
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
			clear(seenNext)
		}
	}
}

// page gets one objects page and streams its envelope into the extractor.
// It returns the envelope's more/next/count and the page's
// X-TAXII-Date-Added-Last header.
func (c *Client) page(ctx context.Context, u string, x *extractor, position *int64, sink ioc.Sink) (envelopeInfo, string, error) {
	resp, err := c.get(ctx, u, ioc.InvalidCollectionURL)
	if err != nil {
		return envelopeInfo{}, "", err
	}
	defer drain(resp)
	last := resp.Header.Get("X-TAXII-Date-Added-Last")
	var sinkErr error
	body := &limitedBody{r: resp.Body, left: maxPageBytes}
	info, err := decodeEnvelope(body, func(o *stixObject, decodeErr error) error {
		*position++
		if err := x.decoded(ctx, *position, o, decodeErr, sink); err != nil {
			sinkErr = err
			return err
		}
		return nil
	})
	switch {
	case sinkErr != nil:
		return info, "", fmt.Errorf("taxii: unable to hand over object %d: %w", *position, sinkErr)
	case ctx.Err() != nil:
		return info, "", fmt.Errorf("taxii: unable to read %s: %w", u, ctx.Err())
	case body.exceeded:
		return info, "", ioc.Fail(ioc.FetchingDataError, fmt.Errorf("taxii: page %s is larger than %d bytes", u, maxPageBytes))
	case err != nil:
		return info, "", ioc.Fail(ioc.FetchingDataError, fmt.Errorf("taxii: unable to decode %s: %w", u, err))
	}
	return info, last, nil
}

// limitedBody is io.LimitReader that remembers it cut the body.
type limitedBody struct {
	r        io.Reader
	left     int64
	exceeded bool
}

func (l *limitedBody) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// At the limit: only an exhausted body is fine.
		var one [1]byte
		if n, err := l.r.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		l.exceeded = true
		return 0, io.ErrUnexpectedEOF
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
