package server

import (
	"bufio"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/store"
)

// exportPage is how many IoCs an export reads at a time: one page in
// memory, whatever the size of the export.
const exportPage = store.MaxIoCPage

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
	feeds, _, err := s.store.Feeds(r.Context(), exp.Query) // no limit: the feeds table is small
	if err != nil {
		writeErr(w, r, err)
		return
	}
	out, err := newCSVExport(w, exportFilename("feeds", "csv"), columns)
	if err != nil {
		return
	}
	for i := range feeds {
		if err := out.Write(&feeds[i]); err != nil {
			return
		}
	}
	out.Flush()
}

// exportIoCs streams IoCs page by page as CSV (format csv) or as plain text,
// one value per line (format txt) for firewalls' external dynamic lists.
func (s *Server) exportIoCs(format string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		exp, err := s.resolver.IoCExportFrom(ctx, r.URL.Query())
		if err != nil {
			writeErr(w, r, err)
			return
		}
		columns, err := selectColumns(iocColumns, strings.Join(exp.Columns, ","))
		if err != nil {
			writeErr(w, r, store.Invalid("columns", "%v", err))
			return
		}
		page, err := s.store.IoCs(ctx, exp.Filter, exp.Order, exportPage, "")
		if err != nil {
			writeErr(w, r, err)
			return
		}
		var (
			csvOut  *csvExport[exportedIoC]
			textOut *bufio.Writer
		)
		if format == "txt" {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": exportFilename("iocs", "txt")}))
			textOut = bufio.NewWriter(w)
			defer textOut.Flush()
		} else if csvOut, err = newCSVExport(w, exportFilename("iocs", "csv"), columns); err != nil {
			return
		}
		feedNames := map[int64]string{}
		for {
			if textOut != nil {
				for i := range page.IoCs {
					textOut.WriteString(page.IoCs[i].Value)
					textOut.WriteByte('\n')
				}
			} else if err := s.writeIoCRows(r, csvOut, page.IoCs, feedNames, wantsSources(columns)); err != nil {
				s.log.Warn("IoC export cut short", "error", err)
				return
			}
			if !page.HasNextPage {
				break
			}
			if page, err = s.store.IoCs(ctx, exp.Filter, exp.Order, exportPage, page.EndCursor); err != nil {
				// Headers are gone: the truncated body is all we can signal.
				s.log.Warn("IoC export cut short", "error", err)
				return
			}
		}
		if csvOut != nil {
			csvOut.Flush()
		}
	}
}

func wantsSources(columns []csvColumn[exportedIoC]) bool {
	for _, c := range columns {
		if c.Key == "sources" {
			return true
		}
	}
	return false
}

// writeIoCRows writes one page, reading the page's sightings (and the
// names of feeds not seen yet) in one query each.
func (s *Server) writeIoCRows(r *http.Request, out *csvExport[exportedIoC], iocs []store.IoC, feedNames map[int64]string, withSources bool) error {
	var sightings map[int64][]store.Sighting
	if withSources {
		ids := make([]int64, len(iocs))
		for i := range iocs {
			ids[i] = iocs[i].ID
		}
		var err error
		if sightings, err = s.store.SightingsByIoC(r.Context(), ids); err != nil {
			return err
		}
		var missing []int64
		for _, ss := range sightings {
			for _, sg := range ss {
				if _, ok := feedNames[sg.FeedID]; !ok {
					feedNames[sg.FeedID] = ""
					missing = append(missing, sg.FeedID)
				}
			}
		}
		if len(missing) > 0 {
			feeds, err := s.store.FeedsByID(r.Context(), missing)
			if err != nil {
				return err
			}
			for _, f := range feeds {
				feedNames[f.ID] = f.Name
			}
		}
	}
	for i := range iocs {
		row := exportedIoC{ioc: &iocs[i]}
		if withSources {
			parts := make([]string, 0, len(sightings[iocs[i].ID]))
			for _, sg := range sightings[iocs[i].ID] {
				parts = append(parts, feedNames[sg.FeedID]+"/"+sg.Source)
			}
			row.sources = strings.Join(parts, ";")
		}
		if err := out.Write(row); err != nil {
			return err
		}
	}
	return nil
}
