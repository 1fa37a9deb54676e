package server

import (
	"database/sql"
	"mime"
	"net/http"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/stix"
	"github.com/tifeeds/tifeeds/store"
)

// exportSTIX streams the IoCs as a STIX 2.1 bundle: this installation's
// identity, then one indicator per IoC, with the filters, order, saved
// views, auth and validators of the other IoC exports.
func (s *Server) exportSTIX(w http.ResponseWriter, r *http.Request) {
	exp, err := s.resolver.IoCExportFrom(r.Context(), r.URL.Query())
	if err != nil {
		writeErr(w, r, err)
		return
	}
	identity, err := s.identity(r)
	if err != nil {
		writeErr(w, r, err)
		return
	}
	key, err := s.ruleActionsValidator(r, "iocs.stix.json")
	if err != nil {
		writeErr(w, r, err)
		return
	}
	var (
		changedAt  int64
		text       sql.NullString
		keepAction sql.NullBool
	)
	cols := store.StreamColumns{
		Extra: []string{"iocs.changed_at",
			"CASE WHEN iocs.type = 'rule' THEN " + store.RuleTextSQL + " END",
			"CASE WHEN iocs.type = 'rule' THEN " + store.RuleActionsAllowedSQL + " END"},
		ExtraDest: func(*store.IoCRow) []any { return []any{&changedAt, &text, &keepAction} },
	}
	out := &stixExport{w: w, filename: exportFilename("iocs", "stix.json"), identity: identity}
	streamIoCExport(s, w, r, key, exp, cols, out, func(out *stixExport, row *store.IoCRow) error {
		rule := text.String // "" but for a rule; AlertOnly returns "" as it is
		if !keepAction.Bool {
			rule = ioc.AlertOnly(rule)
		}
		return out.bundle.Write(stix.NewIndicator(stix.IoC{Kind: row.Type, Value: row.Value, Text: rule,
			Score: row.Score, Tags: row.Tags, FirstSeen: row.FirstSeen, ExpiresAt: row.ExpiresAt,
			ChangedAt: time.UnixMicro(changedAt)}, identity.ID))
	})
}

// identity is this installation's STIX identity.
func (s *Server) identity(r *http.Request) (stix.Identity, error) {
	org, err := s.exportsDB.OrgID(r.Context())
	if err != nil {
		return stix.Identity{}, err
	}
	return stix.NewIdentity(org), nil
}

// stixExport writes the STIX bundle of an export.
type stixExport struct {
	w        http.ResponseWriter
	filename string
	identity stix.Identity
	bundle   *stix.BundleWriter
}

// Start sends the headers, opens the bundle and writes the identity.
func (e *stixExport) Start() error {
	h := e.w.Header()
	h.Set("Content-Type", "application/stix+json;version=2.1")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": e.filename}))
	h.Set("X-Content-Type-Options", "nosniff")
	b, err := stix.NewBundleWriter(e.w)
	if err != nil {
		return err
	}
	e.bundle = b
	return b.Write(e.identity)
}

// Flush closes the bundle.
func (e *stixExport) Flush() error { return e.bundle.Close() }
