package server

import (
	"bufio"
	"database/sql"
	"fmt"
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
// expired rules the sweeper has not removed yet are left out. A rule whose
// feed is not allowed its actions is exported as alert (docs/decisions.md,
// "Who owns a Suricata sid").
func (s *Server) exportRules(w http.ResponseWriter, r *http.Request) {
	exp, err := s.resolver.IoCExportFrom(r.Context(), r.URL.Query())
	if err != nil {
		writeErr(w, r, err)
		return
	}
	none := len(exp.Filter.Types) > 0 && !slices.Contains(exp.Filter.Types, ioc.Rule)
	exp.Filter.Types = []ioc.Kind{ioc.Rule}
	out := &rulesExport{w: w, filename: exportFilename("rules", "rules"), now: time.Now().UTC()}
	if none {
		out.Start()
		out.Flush()
		return
	}
	key, err := s.ruleActionsValidator(r, "rules.rules")
	if err != nil {
		writeErr(w, r, err)
		return
	}
	var text sql.NullString
	var keepAction sql.NullBool
	cols := store.StreamColumns{
		Extra:     []string{store.RuleTextSQL, store.RuleActionsAllowedSQL},
		ExtraDest: func(*store.IoCRow) []any { return []any{&text, &keepAction} },
	}
	streamIoCExport(s, w, r, key, exp, cols, out, func(out *rulesExport, row *store.IoCRow) error {
		// Expired rules the sweeper has not removed yet are not live. This
		// is checked here, not in the filter, so the ETag does not move with
		// the clock.
		if row.ExpiresAt.Before(out.now) {
			return nil
		}
		// A rule stored without its text has nothing to export.
		line := ruleLine(text.String)
		if !keepAction.Bool {
			line = ioc.AlertOnly(line)
		}
		return out.WriteRule(line)
	})
}

// ruleActionsValidator returns the validator key of an export that hands
// out rules. The same rules read otherwise once an allowance of rule
// actions changes, while iocs, which the validators follow, may not: the
// key names the feeds allowed, and a copy older than a feed's update is
// not current.
func (s *Server) ruleActionsValidator(r *http.Request, key string) (string, error) {
	actions, err := s.exportsDB.RuleActions(r.Context())
	if err != nil {
		return "", err
	}
	if ims, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil && actions.FeedUpdated.Truncate(time.Second).After(ims) {
		r.Header.Del("If-Modified-Since")
	}
	return fmt.Sprintf("%s;actions of %v", key, actions.Allowed), nil
}

// rulesExport writes a Suricata rules file: a comment header, then one rule
// a line.
type rulesExport struct {
	w        http.ResponseWriter
	buf      *bufio.Writer
	filename string
	now      time.Time
}

// Start sends the headers and the file's comment header.
func (e *rulesExport) Start() error {
	e.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	e.w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": e.filename}))
	e.buf = bufio.NewWriterSize(e.w, 64<<10)
	e.buf.WriteString("# Suricata rules exported by tifeeds, one rule a line\n")
	e.buf.WriteString("# Source: tifeeds, the live RULE indicators of its feeds (Proofpoint ET Open for the IDS_RULES feed)\n")
	_, err := e.buf.WriteString("# Generated: " + e.now.Format(time.RFC3339) + "\n")
	return err
}

// WriteRule adds one rule; an empty one is left out.
func (e *rulesExport) WriteRule(line string) error {
	if line == "" {
		return nil
	}
	e.buf.WriteString(line)
	return e.buf.WriteByte('\n')
}

// Flush sends what is buffered.
func (e *rulesExport) Flush() error { return e.buf.Flush() }

// ruleLine is a stored rule text as one line of a rules file: a line
// break inside it would end the rule there.
func ruleLine(text string) string {
	text = strings.TrimSpace(text)
	if strings.ContainsAny(text, "\r\n") {
		text = strings.Join(strings.Fields(text), " ")
	}
	return text
}
