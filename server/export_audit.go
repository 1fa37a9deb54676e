package server

import (
	"bufio"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"time"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/input"
	"github.com/tifeeds/tifeeds/store"
)

// auditExportStore is what the audit log's export reads of the store.
type auditExportStore interface {
	AuditEvents(ctx context.Context, f store.AuditFilter, first int, after string) ([]store.AuditEvent, bool, error)
}

// auditLine is one record of the JSON-lines export.
type auditLine struct {
	ID         int64           `json:"id"`
	At         time.Time       `json:"at"`
	ActorID    *int64          `json:"actor_id"`
	Actor      string          `json:"actor"`
	Client     string          `json:"client"`
	Action     string          `json:"action"`
	TargetType string          `json:"target_type"`
	TargetID   string          `json:"target_id"`
	TargetName string          `json:"target_name"`
	Fields     json.RawMessage `json:"fields"`
}

// auditFilterFrom reads the export's filter from the query: actor, action,
// target_type, from and to (RFC 3339).
func auditFilterFrom(r *http.Request) (store.AuditFilter, error) {
	q := r.URL.Query()
	f := store.AuditFilter{Actor: q.Get("actor"), Action: q.Get("action"), TargetType: q.Get("target_type")}
	for name, v := range map[string]string{"actor": f.Actor, "action": f.Action, "target_type": f.TargetType} {
		if err := input.CheckString(name, v); err != nil {
			return f, err
		}
	}
	for name, t := range map[string]*time.Time{"from": &f.From, "to": &f.To} {
		if v := q.Get(name); v != "" {
			parsed, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return f, store.Invalid(name, "must be an RFC 3339 time, e.g. 2026-01-02T15:04:05Z")
			}
			*t = parsed
		}
	}
	return f, nil
}

// exportAudit streams the audit log (root only), newest first, as JSON
// lines, page by page within one of the export slots.
func (s *Server) exportAudit(w http.ResponseWriter, r *http.Request) {
	u, err := auth.Require(r.Context(), store.ScopeRoot)
	if err != nil {
		writeErr(w, r, err)
		return
	}
	f, err := auditFilterFrom(r)
	if err != nil {
		writeRESTErr(w, r, err, nil)
		return
	}
	release, ok := s.exports.take(w, u.ID)
	if !ok {
		return
	}
	defer release()
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": exportFilename("audit", "jsonl")}))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	buf := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(buf)
	after := ""
	for {
		events, more, err := s.auditDB.AuditEvents(r.Context(), f, store.MaxAuditPage, after)
		if err != nil {
			// Headers are gone: the truncated body is all we can signal.
			s.log.Warn("Audit export cut short", "error", err)
			return
		}
		for _, e := range events {
			fields := json.RawMessage(e.Fields)
			if !json.Valid(fields) {
				fields = json.RawMessage(`{}`)
			}
			if err := enc.Encode(auditLine{ID: e.ID, At: e.At.UTC(), ActorID: e.ActorID, Actor: e.Actor, Client: e.Client,
				Action: e.Action, TargetType: e.TargetType, TargetID: e.TargetID, TargetName: e.TargetName, Fields: fields}); err != nil {
				return
			}
		}
		if !more || len(events) == 0 {
			break
		}
		after = store.AuditCursor(events[len(events)-1])
	}
	buf.Flush()
}
