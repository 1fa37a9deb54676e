package server

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/input"
	"github.com/tifeeds/tifeeds/store"
)

// exportStore is what the export handlers (CSV, text, rules, STIX) ask of
// the store.
type exportStore interface {
	Feeds(ctx context.Context, fq store.FeedQuery) ([]store.Feed, int, error)
	IoCStats(ctx context.Context) (store.IoCStats, error)
	StreamIoCs(ctx context.Context, f store.IoCFilter, o store.IoCOrder, cols store.StreamColumns, fn func(*store.IoCRow) error) error
	RuleActions(ctx context.Context) (store.RuleActions, error)
	OrgID(ctx context.Context) (string, error)
}

func formatTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// feedColumns are the feeds table's columns, keyed like the dashboard's.
var feedColumns = []csvColumn[*store.Feed]{
	{Key: "name", Header: "Name", Text: true, Value: func(f *store.Feed) string { return f.Name }},
	{Key: "type", Header: "Type", Text: true, Value: func(f *store.Feed) string { return feedTypeLabel(f.Type) }},
	{Key: "status", Header: "Status", Text: true, Value: func(f *store.Feed) string { return statusLabel(f.DerivedStatus()) }},
	{Key: "statusMessage", Header: "Status Message", Text: true, Value: func(f *store.Feed) string { return f.StatusMessage }},
	{Key: "enabled", Header: "Enabled", Value: func(f *store.Feed) string {
		if f.Enabled {
			return "Enabled"
		}
		return "Disabled"
	}},
	{Key: "pollingFrequency", Header: "Polling Frequency", Value: func(f *store.Feed) string { return strconv.Itoa(f.PollingFrequency) }},
	{Key: "retentionPeriod", Header: "Retention Period", Value: func(f *store.Feed) string { return strconv.Itoa(f.RetentionPeriod) }},
	{Key: "backfillDays", Header: "Backfill Days", Value: func(f *store.Feed) string { return strconv.Itoa(f.BackfillDays) }},
	{Key: "description", Header: "Description", Text: true, Value: func(f *store.Feed) string { return f.Description }},
	{Key: "lastIngestion", Header: "Last Ingestion", Value: func(f *store.Feed) string { return formatTime(f.LastIngestion) }},
}

func feedTypeLabel(t store.FeedType) string {
	switch t {
	case store.FeedBuiltin:
		return "Built-in"
	case store.FeedCustom:
		return "Custom"
	case store.FeedPremium:
		return "Premium"
	}
	return string(t)
}

func statusLabel(s store.FeedStatus) string {
	switch s {
	case store.StatusSuccess:
		return "Success"
	case store.StatusError:
		return "Error"
	case store.StatusDisabled:
		return "Disabled"
	}
	return string(s)
}

// exportedIoC is an IoC with what its export row shows of its sightings.
type exportedIoC struct {
	ioc     *store.IoC
	sources string
}

var iocColumns = []csvColumn[exportedIoC]{
	{Key: "type", Header: "Type", Value: func(r exportedIoC) string { return strings.ToUpper(string(r.ioc.Type)) }},
	{Key: "value", Header: "Value", Text: true, Value: func(r exportedIoC) string { return r.ioc.Value }},
	{Key: "score", Header: "Score", Value: func(r exportedIoC) string { return strconv.Itoa(r.ioc.Score) }},
	{Key: "tags", Header: "Tags", Text: true, Value: func(r exportedIoC) string { return strings.Join(r.ioc.Tags, ";") }},
	{Key: "sources", Header: "Sources", Text: true, Value: func(r exportedIoC) string { return r.sources }},
	{Key: "firstSeen", Header: "First Seen", Value: func(r exportedIoC) string { return formatTime(&r.ioc.FirstSeen) }},
	{Key: "lastSeen", Header: "Last Seen", Value: func(r exportedIoC) string { return formatTime(&r.ioc.LastSeen) }},
	{Key: "expirationDate", Header: "Expiration Date", Value: func(r exportedIoC) string { return formatTime(&r.ioc.ExpiresAt) }},
}

func exportFilename(table, ext string) string {
	return fmt.Sprintf("tifeeds-%s-%s.%s", table, time.Now().UTC().Format("20060102-150405"), ext)
}

// exportFeeds streams the feeds table as CSV, with the table's search,
// filter, order, or a saved view.
func (s *Server) exportFeeds(w http.ResponseWriter, r *http.Request) {
	if _, err := auth.Require(r.Context(), store.ScopeRoot); err != nil {
		writeErr(w, r, err)
		return
	}
	exp, err := s.resolver.FeedExportFrom(r.Context(), r.URL.Query())
	if err != nil {
		writeErr(w, r, err)
		return
	}
	columns, err := selectColumns(feedColumns, strings.Join(exp.Columns, ","))
	if err != nil {
		writeErr(w, r, store.Invalid("columns", "%v", err))
		return
	}
	feeds, _, err := s.exportsDB.Feeds(r.Context(), exp.Query) // no limit: the feeds table is small
	if err != nil {
		writeErr(w, r, err)
		return
	}
	out := newCSVExport(w, exportFilename("feeds", "csv"), columns)
	if err := out.Start(); err != nil {
		return
	}
	for i := range feeds {
		if err := out.Write(&feeds[i]); err != nil {
			return
		}
	}
	out.Flush()
}

// exportIoCs streams IoCs as CSV (format csv) or as plain text, one value
// per line (format txt) for firewalls' external dynamic lists, from one
// query (see streamIoCExport).
func (s *Server) exportIoCs(format string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		exp, err := s.resolver.IoCExportFrom(r.Context(), r.URL.Query())
		if err != nil {
			writeErr(w, r, err)
			return
		}
		columns, err := selectColumns(iocColumns, strings.Join(exp.Columns, ","))
		if err != nil {
			writeErr(w, r, store.Invalid("columns", "%v", err))
			return
		}
		if format == "txt" {
			streamIoCExport(s, w, r, "iocs."+format, exp, store.StreamColumns{ValueOnly: true},
				newTextExport(w, exportFilename("iocs", "txt")),
				func(out *textExport, row *store.IoCRow) error { return out.WriteLine(row.Value) })
			return
		}
		csvOut := newCSVExport(w, exportFilename("iocs", "csv"), columns)
		streamIoCExport(s, w, r, "iocs."+format+"\x00"+strings.Join(exp.Columns, ","), exp,
			store.StreamColumns{WithSources: wantsSources(columns)}, csvOut,
			func(out *csvExport[exportedIoC], row *store.IoCRow) error {
				return out.Write(exportedIoC{ioc: &row.IoC, sources: row.Sources})
			})
	}
}

// rowWriter is the body of an export: its header goes out with the first
// byte, after the status is decided.
type rowWriter interface {
	Start() error
	Flush() error
}

// streamIoCExport answers an export of the IoCs exp selects: 304 when the
// request's validators match (without reading an IoC), else the rows of one
// StreamIoCs query, each written by write. key names the export's format
// and columns in its ETag, which also covers exp's filter and order, and
// moves with every change of iocs (ioc_stats.version). The rules export
// uses it with its own key, columns and writer. The rows are read within
// the bound of exportSlots.
func streamIoCExport[W rowWriter](s *Server, w http.ResponseWriter, r *http.Request, key string, exp input.IoCExport,
	cols store.StreamColumns, out W, write func(W, *store.IoCRow) error) {
	ctx := r.Context()
	st, err := s.exportsDB.IoCStats(ctx)
	if err != nil {
		writeErr(w, r, err)
		return
	}
	if exp.ExcludeWarnings {
		// What is left out moves with the lists in force, not only with
		// the IoCs.
		set := s.resolver.WarninglistSet()
		key += "\x00warnings:" + set.Fingerprint()
		next := write
		write = func(out W, row *store.IoCRow) error {
			if set.Flagged(row.Type, row.Value) {
				return nil
			}
			return next(out, row)
		}
	}
	if notModified(w, r, exportETag(st.Version, key, exp), st.ChangedAt) {
		return
	}
	user, err := auth.UserFrom(ctx)
	if err != nil {
		writeErr(w, r, err)
		return
	}
	release, ok := s.exports.take(w, user.ID)
	if !ok {
		return
	}
	defer release()
	if err := out.Start(); err != nil {
		return
	}
	err = s.exportsDB.StreamIoCs(ctx, exp.Filter, exp.Order, cols, func(row *store.IoCRow) error { return write(out, row) })
	if err != nil {
		// Headers are gone: the truncated body is all we can signal.
		s.log.Warn("IoC export cut short", "error", err)
		return
	}
	out.Flush()
}

// exportETag is a strong validator of an export: the version of iocs and a
// hash of what selects and shapes the rows.
func exportETag(version int64, key string, exp input.IoCExport) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", key)
	_ = json.NewEncoder(h).Encode(exp)
	return fmt.Sprintf(`"%d-%x"`, version, h.Sum(nil)[:12])
}

// notModified sets the export's validators and answers 304 when the
// request's match (RFC 9110 13.1: If-None-Match wins over
// If-Modified-Since). Last-Modified has a one-second granularity; the ETag
// is exact.
func notModified(w http.ResponseWriter, r *http.Request, etag string, changed time.Time) bool {
	h := w.Header()
	h.Set("ETag", etag)
	if !changed.IsZero() {
		h.Set("Last-Modified", changed.UTC().Format(http.TimeFormat))
	}
	// Cached copies must be revalidated: exports depend on the caller.
	h.Set("Cache-Control", "private, no-cache")
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		if !etagMatches(inm, etag) {
			return false
		}
	} else if ims := r.Header.Get("If-Modified-Since"); ims != "" && !changed.IsZero() {
		t, err := http.ParseTime(ims)
		if err != nil || changed.Truncate(time.Second).After(t) {
			return false
		}
	} else {
		return false
	}
	w.WriteHeader(http.StatusNotModified)
	return true
}

// etagMatches is If-None-Match's weak comparison of a list of tags or "*".
func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

func wantsSources(columns []csvColumn[exportedIoC]) bool {
	for _, c := range columns {
		if c.Key == "sources" {
			return true
		}
	}
	return false
}

// textExport writes one value per line, for firewalls' external dynamic
// lists.
type textExport struct {
	w        http.ResponseWriter
	buf      *bufio.Writer
	filename string
}

func newTextExport(w http.ResponseWriter, filename string) *textExport {
	return &textExport{w: w, filename: filename}
}

// Start sends the headers.
func (e *textExport) Start() error {
	e.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	e.w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": e.filename}))
	e.w.Header().Set("X-Content-Type-Options", "nosniff")
	e.buf = bufio.NewWriterSize(e.w, 64<<10)
	return nil
}

// WriteLine adds one line.
func (e *textExport) WriteLine(v string) error {
	e.buf.WriteString(v)
	return e.buf.WriteByte('\n')
}

// Flush sends what is buffered.
func (e *textExport) Flush() error { return e.buf.Flush() }
