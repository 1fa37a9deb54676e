// Package abusech is what the abuse.ch sources share (urlhaus: URLhaus and
// SSLBL; threatfox): the GET with abuse.ch's Auth-Key and retry defaults,
// the download of one CSV file, the CSV row loop with its rejections, the
// cursor of an incremental export listed newest first, and tags. Like
// feedhttp and csvtable, on which it builds, it imports only ioc and the
// standard library.
package abusech

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/internal/csvtable"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// Retry defaults of the abuse.ch sources: abuse.ch asks bulk clients to
// back off, so they wait longer than feedhttp's defaults.
const (
	DefaultMaxRetries   = feedhttp.DefaultMaxRetries
	DefaultMaxRetryWait = 5 * time.Minute
	// DefaultRetryBackoff is the first wait before repeating a 429 or 5xx
	// that gave no usable Retry-After; the n-th repeat waits n times it.
	DefaultRetryBackoff = 30 * time.Second
)

// Conn is what an abuse.ch source's requests read of its knobs; the zero
// value of each is its default.
type Conn struct {
	// MaxRetries 0: DefaultMaxRetries, negative: never; MaxRetryWait 0:
	// DefaultMaxRetryWait; RetryBackoff 0: DefaultRetryBackoff.
	feedhttp.Settings
	// Key is the Auth-Key (--abusech-auth-key), sent when set.
	Key string
}

// Getter sends abuse.ch's GETs for who ("urlhaus", "sslbl"), with the
// Auth-Key when one is set; a 401 or 403 names the setting to check.
func (c Conn) Getter(who string) *feedhttp.Getter {
	g := &feedhttp.Getter{
		Settings:    c.Settings.Or(feedhttp.Settings{MaxRetryWait: DefaultMaxRetryWait, RetryBackoff: DefaultRetryBackoff}),
		Who:         who,
		Header:      http.Header{"User-Agent": {"tifeeds"}},
		Secret:      c.Key,
		Credentials: "abuse.ch asks for an Auth-Key: set --abusech-auth-key (TIFEEDS_ABUSECH_AUTH_KEY)",
	}
	if c.Key != "" {
		g.Header.Set("Auth-Key", c.Key)
		g.Credentials = "abuse.ch refused the Auth-Key set by --abusech-auth-key (TIFEEDS_ABUSECH_AUTH_KEY)"
	}
	return g
}

// Download GETs u, conditionally on prev, and unless it is unchanged (a
// 304: unchanged is true) parses its body, capped at max bytes, with
// parse. It returns the download's validators. Every error is classified:
// g's, or g.BodyFailure's with what ("the list") naming the download; a
// parser wraps errors of the sink in feedhttp.SinkError.
func Download(ctx context.Context, g *feedhttp.Getter, u string, prev feedhttp.Validators, max int64, what string,
	sink source.Sink, parse func(io.Reader) error) (next feedhttp.Validators, unchanged bool, err error) {
	resp, err := g.Get(ctx, u, prev)
	if err != nil {
		return prev, false, err
	}
	defer feedhttp.Close(resp)
	if resp.StatusCode == http.StatusNotModified {
		return prev, true, nil
	}
	body := feedhttp.NewBody(sink, resp, max)
	if err := parse(body); err != nil {
		return prev, false, g.BodyFailure(ctx, what, body, err)
	}
	return feedhttp.ValidatorsOf(resp), false, nil
}

// Rows reads the CSV file r, whose header names at least columns, and
// calls row with each record and its line. A record that is not CSV is
// rejected with its line and reading goes on; row's error ends the read
// and is returned as it is. A file without such a header, or that cannot
// be read on, is bad data of who ("sslbl"), file naming it in the message.
func Rows(r io.Reader, who, file string, columns []string, sink source.Sink, row func(t *csvtable.Table, rec []string, line int64) error) error {
	t, err := csvtable.Open(r, columns...)
	if err != nil {
		return badFormat(who, "unable to read the header of %s: %w", file, err)
	}
	for {
		rec, line, err := t.Next()
		if err == io.EOF {
			return nil
		}
		if pe := (*csv.ParseError)(nil); errors.As(err, &pe) {
			sink.Rejected(line, "not a CSV record: "+pe.Err.Error())
			continue
		}
		if err != nil {
			return badFormat(who, "unable to read the rows of %s: %w", file, err)
		}
		if err := row(t, rec, line); err != nil {
			return err
		}
	}
}

func badFormat(who, format string, a ...any) error {
	return ioc.Fail(ioc.FetchingDataError, fmt.Errorf(who+": "+format, a...))
}

// Hand gives ind to sink, wrapping an error of the sink in
// feedhttp.SinkError.
func Hand(ctx context.Context, sink source.Sink, ind ioc.Indicator) error {
	if err := sink.Indicator(ctx, ind); err != nil {
		return &feedhttp.SinkError{Err: err}
	}
	return nil
}

// Stamp is the layout of abuse.ch's time stamps (UTC), as a Mark keeps
// them; a stamp read may end in " UTC".
const Stamp = "2006-01-02 15:04:05"

// Mark is how far an incremental export was read: the latest stamp of the
// rows read, and the ids of the rows of that second, so that a row added
// in the same second after a run is still read, and once.
type Mark struct {
	At  string   // in Stamp's layout; "" before the first run
	IDs []string // the ids read at At
}

// ParseCursor reads a cursor that Cursor wrote; anything else ("", an
// older format) is the zero T: the next run reads as a first run.
func ParseCursor[T any](cursor string) T {
	var v T
	if json.Unmarshal([]byte(cursor), &v) != nil {
		var zero T
		return zero
	}
	return v
}

// Cursor is v (a source's state) as a cursor: its JSON.
func Cursor(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Export is an incremental abuse.ch CSV export, listed newest first,
// whose rows have an id and a time stamp.
type Export struct {
	Who  string // the list, prefix of messages: "urlhaus"
	File string // names the file in messages: "csv_recent"
	ID   string // the id column: "id", "ioc_id"
	Time string // the time stamp column: "dateadded", "first_seen_utc"
	// Columns are the other columns a row needs.
	Columns []string
}

// Read hands sink the indicator that row makes of each row newer than
// after (when after is zero, the first run, of each row from since on;
// a zero since bounds nothing), and returns after moved past them. row
// returns the reason a row is not used instead ("" when it is), and the
// row is rejected with it, as is a row without an id or whose time stamp
// is not a date. An error (bad data, the sink's as feedhttp.SinkError)
// returns after unmoved.
func (e Export) Read(ctx context.Context, r io.Reader, after Mark, since time.Time, sink source.Sink,
	row func(t *csvtable.Table, rec []string) (ioc.Indicator, string)) (Mark, error) {
	var from time.Time
	if after.At != "" {
		var err error
		if from, err = time.Parse(Stamp, after.At); err != nil {
			after = Mark{} // not ours: read as a first run
		}
	}
	next := after
	err := Rows(r, e.Who, e.File, append([]string{e.ID, e.Time}, e.Columns...), sink,
		func(t *csvtable.Table, rec []string, line int64) error {
			id, stamp := t.Get(rec, e.ID), t.Get(rec, e.Time)
			at, perr := time.Parse(Stamp, strings.TrimSuffix(stamp, " UTC"))
			switch {
			case id == "":
				sink.Rejected(line, "no "+e.ID)
				return nil
			case perr != nil:
				sink.Rejected(line, fmt.Sprintf("%s %q is not a date", e.Time, stamp))
				return nil
			case after.At != "" && (at.Before(from) || at.Equal(from) && slices.Contains(after.IDs, id)):
				return nil // read by an earlier run
			case after.At == "" && !since.IsZero() && at.Before(since):
				return nil // before the backfill window
			}
			ind, reason := row(t, rec)
			if reason != "" {
				sink.Rejected(line, reason)
				return nil
			}
			if err := Hand(ctx, sink, ind); err != nil {
				return err
			}
			next.advance(at, id)
			return nil
		})
	if err != nil {
		return after, err
	}
	return next, nil
}

// advance moves m to a row of at with id.
func (m *Mark) advance(at time.Time, id string) {
	cur, err := time.Parse(Stamp, m.At)
	switch {
	case m.At == "" || err != nil || at.After(cur):
		m.At, m.IDs = at.UTC().Format(Stamp), []string{id}
	case at.Equal(cur) && !slices.Contains(m.IDs, id):
		m.IDs = append(slices.Clip(m.IDs), id)
	}
}

// Tags splits comma-separated lists of tags into lower-case tags, inner
// spaces folded, without duplicates and without abuse.ch's literal "None".
func Tags(lists ...string) []string {
	var out []string
	for _, l := range lists {
		for _, t := range strings.Split(l, ",") {
			t = strings.ToLower(strings.Join(strings.Fields(t), " "))
			if t == "" || t == "none" || slices.Contains(out, t) {
				continue
			}
			out = append(out, t)
		}
	}
	return out
}
