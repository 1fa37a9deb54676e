package server

import (
	"bufio"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// exportRules streams the live RULE IoCs as a Suricata rules file: a
// comment header, then each rule's text on one line. It takes the same
// search, filter, order and saved view as the IoC exports; the type is
// always RULE (a filter naming only other kinds exports no rule), and
// expired rules the sweeper has not removed yet are left out.
func (s *Server) exportRules(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	exp, err := s.resolver.IoCExportFrom(ctx, r.URL.Query())
	if err != nil {
		writeErr(w, r, err)
		return
	}
	f := exp.Filter
	none := len(f.Types) > 0 && !slices.Contains(f.Types, ioc.Rule)
	f.Types = []ioc.Kind{ioc.Rule}
	now := time.Now().UTC()
	if f.ExpiresAfter == nil || f.ExpiresAfter.Before(now) {
		f.ExpiresAfter = &now
	}
	page := &store.IoCPage{}
	if !none {
		if page, err = s.store.IoCs(ctx, f, exp.Order, exportPage, ""); err != nil {
			writeErr(w, r, err)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": exportFilename("rules", "rules")}))
	out := bufio.NewWriter(w)
	defer out.Flush()
	out.WriteString("# Suricata rules exported by tifeeds, one rule a line\n")
	out.WriteString("# Source: tifeeds, the live RULE indicators of its feeds (Proofpoint ET Open for the IDS_RULES feed)\n")
	out.WriteString("# Generated: " + now.Format(time.RFC3339) + "\n")
	for {
		ids := make([]int64, len(page.IoCs))
		for i := range page.IoCs {
			ids[i] = page.IoCs[i].ID
		}
		texts, err := s.store.IoCTexts(ctx, ids)
		if err != nil {
			// Headers are gone: the truncated body is all we can signal.
			s.log.Warn("Rules export cut short", "error", err)
			return
		}
		for _, id := range ids {
			// A rule stored without its text has nothing to export.
			if text := ruleLine(texts[id]); text != "" {
				out.WriteString(text)
				out.WriteByte('\n')
			}
		}
		if !page.HasNextPage {
			return
		}
		if page, err = s.store.IoCs(ctx, f, exp.Order, exportPage, page.EndCursor); err != nil {
			s.log.Warn("Rules export cut short", "error", err)
			return
		}
	}
}

// ruleLine is a stored rule text as one line of a rules file: a line
// break inside it would end the rule there.
func ruleLine(text string) string {
	text = strings.TrimSpace(text)
	if strings.ContainsAny(text, "\r\n") {
		text = strings.Join(strings.Fields(text), " ")
	}
	return text
}
