// Package risklist reads Recorded Future's entity risk lists (the RISK_LIST
// premium kind): four snapshot lists (ip, domain, url, hash), each a gzip
// CSV whose EvidenceDetails cell holds JSON. A list is downloaded only when
// its ETag (asked with HEAD) changed or its pass is not finished, and is
// written at the constant rate the runner sets: the source keeps, per list,
// how many rows of the current pass were handed over, skips them on the
// next poll and stops at source.ErrPaceReached.
package risklist

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/internal/csvtable"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// Host is Recorded Future's API host.
const Host = "api.recordedfuture.com"

// Lists are the entity lists read, in order, with the kind of their values
// (the hash list's kind is decided per row by the hash's length).
var Lists = []string{"ip", "domain", "url", "hash"}

// Defaults of the caps.
const (
	// DefaultMaxBytes caps a compressed download: RF's largest default
	// list (ip) is some tens of MB gzipped.
	DefaultMaxBytes = 1 << 30
	// DefaultMaxRawBytes caps a list once decompressed, against a
	// decompression bomb: EvidenceDetails make rows of a few KB.
	DefaultMaxRawBytes = 16 << 30
	// checkpointEvery is how many rows go between two checkpoints, so
	// that an interrupted poll resumes close to where it stopped.
	checkpointEvery = 1000
)

// Source reads the four risk lists. Every request goes through Client (the
// server's egress policy and feed mirror); the URLs are the vendor's own.
type Source struct {
	feedhttp.Settings
	// Knobs for tests; zero values are safe defaults.
	MaxBytes, MaxRawBytes int64
}

// URL is the address of an entity's risk list.
func URL(list string) string {
	return "https://" + Host + "/v2/" + list + "/risklist?format=csv%2Fsplunk&gzip=true&list=default"
}

// SourceName is the Indicator.Source of a list's values.
func SourceName(list string) string { return "rf-" + list }

// Cursor is the source's state, kept as JSON.
type Cursor struct {
	Lists map[string]*ListState `json:"lists"`
	// Next is the list the last poll was writing when its share ran out:
	// the next poll starts there and goes round the others, so that a
	// list that changes often cannot hold the ones after it back for good.
	Next string `json:"next,omitempty"`
}

// ListState is where one list's pass stands.
type ListState struct {
	// ETag of the version read last.
	ETag string `json:"etag,omitempty"`
	// Row is how many data rows of the pass were handed over (or
	// rejected): the next poll goes on after them.
	Row int64 `json:"row"`
	// Total is the rows of the version read last, once read to its end.
	Total int64 `json:"total,omitempty"`
	// Done says that the pass wrote the whole list: the next poll
	// downloads it only when its ETag changed.
	Done bool `json:"done,omitempty"`
	// PassStart is when the pass began; values of the list last seen
	// before it are expired when the pass ends.
	PassStart time.Time `json:"pass_start"`
	// Mixed says that the list changed during the pass: it then read no
	// one version whole, so it expires nothing (the 14-day retention
	// removes what it dropped).
	Mixed bool `json:"mixed,omitempty"`
}

func parseCursor(s string) Cursor {
	var c Cursor
	if json.Unmarshal([]byte(s), &c) != nil || c.Lists == nil {
		c.Lists = map[string]*ListState{}
	}
	return c
}

func (c Cursor) String() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// backlog is the rows written of the rows known, over every list.
func (c Cursor) backlog() (written, total int64) {
	for _, st := range c.Lists {
		if st.Done {
			written += st.Total
			total += st.Total
			continue
		}
		written += st.Row
		total += max(st.Total, st.Row)
	}
	return written, total
}

// Fetch walks the risk lists with the feed's API token (req.Feed.Password).
func (s *Source) Fetch(ctx context.Context, req source.Request, sink source.Sink) error {
	return source.Walk(s.fetch).Fetch(ctx, req, sink)
}

// fetch reads the lists that changed or whose pass is not done, in order,
// and returns the cursor. A list that fails does not stop the others: the
// run then ends with an *ioc.PartialFailure naming it. When every list is
// done and unchanged it returns ioc.ErrUnchanged.
func (s *Source) fetch(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
	cursor, token := req.Cursor, req.Feed.Password
	if token == "" {
		return cursor, ioc.Fail(ioc.InvalidCredentials, errors.New("risklist: no API key is set: set the feed's API key"))
	}
	cur := parseCursor(cursor)
	var failed []ioc.SubFailure
	downloaded := false
	order := rotate(Lists, cur.Next)
	for i, list := range order {
		st := cur.Lists[list]
		if st == nil {
			st = &ListState{}
			cur.Lists[list] = st
		}
		cur.Next = list
		read, err := s.list(ctx, token, list, st, cur, sink)
		downloaded = downloaded || read
		if err == nil {
			continue
		}
		if errors.Is(err, source.ErrPaceReached) {
			// This poll's share is written; the lists after it wait. Those
			// never read are sized now, so that the progress counts them.
			s.size(ctx, token, order[i+1:], cur, sink)
			written, total := cur.backlog()
			sink.Backlog(written, total)
			out := cur.String()
			if cerr := sink.Checkpoint(ctx, out); cerr != nil {
				return out, cerr
			}
			return out, err
		}
		if ctx.Err() != nil || isSinkErr(err) {
			return cur.String(), err
		}
		failed = append(failed, ioc.SubFailure{Name: "risk list " + list, Err: err})
	}
	cur.Next = ""
	written, total := cur.backlog()
	sink.Backlog(written, total)
	out := cur.String()
	if len(failed) > 0 {
		// The lists that worked are kept: their cursor goes with the data.
		if err := sink.Checkpoint(ctx, out); err != nil {
			return out, err
		}
		return out, ioc.Partial(failed)
	}
	if !downloaded {
		return out, ioc.ErrUnchanged
	}
	return out, nil
}

// rotate returns lists starting at first (when it is one of them).
func rotate(lists []string, first string) []string {
	i := max(slices.Index(lists, first), 0)
	return slices.Concat(lists[i:], lists[:i])
}

// size learns the row count of each of lists that was never read, without
// handing anything over, so that the progress of a first pass counts every
// list rather than the ones reached so far. It costs one download of each
// such list, once; a list that fails is left unsized (its turn says why).
// The count is kept with the list's ETag and used when its pass starts on
// the same version.
func (s *Source) size(ctx context.Context, token string, lists []string, cur Cursor, sink source.Sink) {
	for _, list := range lists {
		st := cur.Lists[list]
		if st == nil {
			st = &ListState{}
			cur.Lists[list] = st
		}
		if st.Done || !st.PassStart.IsZero() || st.Total > 0 || ctx.Err() != nil {
			continue
		}
		g := s.getter(token, list)
		resp, err := g.Get(ctx, URL(list), feedhttp.Validators{})
		if err != nil {
			continue
		}
		body := feedhttp.NewBody(sink, resp, feedhttp.Or(s.MaxBytes, DefaultMaxBytes))
		n, err := countRows(body, feedhttp.Or(s.MaxRawBytes, DefaultMaxRawBytes))
		etag := resp.Header.Get("ETag")
		feedhttp.Close(resp)
		if err != nil || etag == "" {
			continue
		}
		st.ETag, st.Total = etag, n
	}
}

// countRows counts the data rows of a list.
func countRows(r io.Reader, maxRaw int64) (int64, error) {
	raw, err := decompress(r, maxRaw)
	if err != nil {
		return 0, err
	}
	t, err := csvtable.Open(raw, "name", "risk", "evidencedetails")
	if err != nil {
		return 0, err
	}
	var n int64
	for {
		_, _, err := t.Next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil && !isParseError(err) {
			return 0, err
		}
		n++
	}
}

// sinkErr marks an error of the sink, passed on as it is.
type sinkErr struct{ error }

func (e sinkErr) Unwrap() error { return e.error }

func isSinkErr(err error) bool {
	var se sinkErr
	return errors.As(err, &se)
}

// list reads one list if needed and says whether it downloaded it.
func (s *Source) list(ctx context.Context, token, list string, st *ListState, cur Cursor, sink source.Sink) (bool, error) {
	g := s.getter(token, list)
	u := URL(list)
	head, err := g.Head(ctx, u)
	if err != nil {
		return false, err
	}
	feedhttp.Close(head)
	etag := head.Header.Get("ETag")
	if st.Done && etag != "" && etag == st.ETag {
		return false, nil // unchanged since its pass ended
	}
	now := s.now()
	switch {
	case st.Done || st.PassStart.IsZero():
		sized := !st.Done && etag != "" && etag == st.ETag
		total := st.Total
		*st = ListState{ETag: etag, PassStart: now}
		if sized {
			st.Total = total // sized by an earlier poll (see size)
		}
	case etag != st.ETag:
		// A new version mid-pass: go on at the same row of it.
		st.ETag, st.Mixed, st.Total = etag, true, 0
	}
	resp, err := g.Get(ctx, u, feedhttp.Validators{})
	if err != nil {
		return false, err
	}
	defer feedhttp.Close(resp)
	if e := resp.Header.Get("ETag"); e != "" {
		st.ETag = e
	}
	body := feedhttp.NewBody(sink, resp, feedhttp.Or(s.MaxBytes, DefaultMaxBytes))
	raw, err := decompress(body, feedhttp.Or(s.MaxRawBytes, DefaultMaxRawBytes))
	if err != nil {
		return true, g.BodyFailure(ctx, "the list", body, err)
	}
	err = s.parse(ctx, list, raw, st, cur, sink)
	if err != nil && !errors.Is(err, source.ErrPaceReached) && !isSinkErr(err) {
		if f := g.ReadFailure(ctx, "the list", body); f != nil {
			return true, f
		}
		if f := g.ReadFailure(ctx, "the decompressed list", raw); f != nil {
			return true, f
		}
		return true, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("risklist %s: the list is not in the expected format: %w", list, err))
	}
	return true, err
}

// getter reads list with the API token, sent as X-RFToken.
func (s *Source) getter(token, list string) *feedhttp.Getter {
	return &feedhttp.Getter{Settings: s.Settings, Who: "risklist " + list, Secret: token,
		Header:      http.Header{"X-RFToken": {token}, "User-Agent": {"tifeeds"}},
		Credentials: "check the feed's API key"}
}

// decompress gunzips r when it is gzip (RF sends gzip=true lists as a
// gzip body, without Content-Encoding), else reads it as it is.
func decompress(r io.Reader, max int64) (*feedhttp.Body, error) {
	br := bufio.NewReader(r)
	magic, err := br.Peek(2)
	if err != nil && err != io.EOF {
		return nil, err
	}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, err
		}
		return feedhttp.Cap(zr, max), nil
	}
	return feedhttp.Cap(br, max), nil
}

// parse reads the CSV: the rows of the pass already handed over are
// skipped; the others are handed over until the sink says the poll's share
// is written. It reads on to the end to learn the list's size when it does
// not know it.
func (s *Source) parse(ctx context.Context, list string, r io.Reader, st *ListState, cur Cursor, sink source.Sink) error {
	t, err := csvtable.Open(r, "name", "risk", "evidencedetails")
	if err != nil {
		return err
	}
	validUntil := s.now().Add(Retention)
	var row int64
	var paced error // the sink's ErrPaceReached, once this poll's share is used
	paused := false
	for {
		rec, line, err := t.Next()
		if err == io.EOF {
			break
		}
		if err != nil && !isParseError(err) {
			return err
		}
		row++
		if row <= st.Row {
			continue
		}
		if paused {
			continue // only counting
		}
		if err != nil {
			sink.Rejected(line, "not a CSV record: "+err.Error())
		} else if ind, reason := indicator(t, rec, list, validUntil); reason != "" {
			sink.Rejected(line, reason)
		} else if err := sink.Indicator(ctx, ind); err != nil {
			if !errors.Is(err, source.ErrPaceReached) {
				return sinkErr{err}
			}
			st.Row, paced = row, err
			if st.Total > 0 && row < st.Total {
				// The size is known: no need to read on.
				if cerr := sink.Checkpoint(ctx, cur.String()); cerr != nil {
					return sinkErr{cerr}
				}
				return err
			}
			paused = true
			continue
		}
		st.Row = row
		if row%checkpointEvery == 0 {
			if err := sink.Checkpoint(ctx, cur.String()); err != nil {
				return sinkErr{err}
			}
		}
	}
	st.Total = row
	if paused && st.Row < row {
		// The size learnt goes with the cursor: the next polls of this
		// version need not read past their share.
		if err := sink.Checkpoint(ctx, cur.String()); err != nil {
			return sinkErr{err}
		}
		return paced
	}
	// Written to the end (the share may have ended on its last row: the
	// list is complete all the same, not downloaded again to learn it).
	st.Row, st.Done = row, true
	if !st.Mixed {
		sink.ListComplete(SourceName(list), st.PassStart)
	}
	if err := sink.Checkpoint(ctx, cur.String()); err != nil {
		return sinkErr{err}
	}
	return paced
}

// Retention is the spec's fixed retention of risk-list values, from the
// last list that held them.
const Retention = 14 * 24 * time.Hour

// evidence is the JSON of the EvidenceDetails cell.
type evidence struct {
	EvidenceDetails []struct {
		Rule string `json:"Rule"`
	} `json:"EvidenceDetails"`
}

// indicator maps one row; reason is set when it is rejected.
func indicator(t *csvtable.Table, rec []string, list string, validUntil time.Time) (ioc.Indicator, string) {
	name := t.Get(rec, "name")
	if name == "" {
		return ioc.Indicator{}, "no Name"
	}
	var kind ioc.Kind
	switch list {
	case "ip":
		kind = ioc.IP
	case "domain":
		kind = ioc.Domain
	case "url":
		kind = ioc.URL
	case "hash":
		// The hash's length decides, whatever Algorithm says.
		var ok bool
		if kind, ok = ioc.HashKind(name); !ok {
			algo := t.Get(rec, "algorithm")
			if algo == "" {
				algo = strconv.Itoa(len(name)) + "-character"
			}
			return ioc.Indicator{}, "skipped: a " + algo + " hash is not a kind tifeeds keeps"
		}
	}
	value, err := ioc.Normalize(kind, name)
	if err != nil {
		return ioc.Indicator{}, fmt.Sprintf("skipped: %q is not a usable %s: %v", name, kind, err)
	}
	risk, err := strconv.Atoi(t.Get(rec, "risk"))
	if err != nil || risk < 0 || risk > 100 {
		return ioc.Indicator{}, fmt.Sprintf("bad Risk %q", t.Get(rec, "risk"))
	}
	var tags []string
	if cell := t.Get(rec, "evidencedetails"); cell != "" {
		var ev evidence
		if err := json.Unmarshal([]byte(cell), &ev); err != nil {
			return ioc.Indicator{}, "EvidenceDetails is not JSON: " + err.Error()
		}
		for _, d := range ev.EvidenceDetails {
			if tag := strings.ToLower(strings.TrimSpace(d.Rule)); tag != "" && !slices.Contains(tags, tag) {
				tags = append(tags, tag)
			}
		}
	}
	return ioc.Indicator{Kind: kind, Value: value, Source: SourceName(list), Score: risk, Tags: tags,
		ValidUntil: validUntil}, ""
}

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func isParseError(err error) bool {
	var pe *csv.ParseError
	return errors.As(err, &pe)
}

// Kind declares the RiskList premium kind, written at rate indicators an
// hour.
func Kind(rate float64) source.Kind {
	kind := premium.VendorKind(premium.RiskList, func(s feedhttp.Settings) source.Source { return &Source{Settings: s} })
	kind.Rate = rate
	return kind
}
