package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tifeeds/tifeeds/input"
)

// boundRequest puts a deadline on the work of each request and on each
// write of its answer. Only the websocket handshake on /graphql is left
// alone (long-lived; the websocket keeps its own pings and work bounds),
// and streamed exports get no work deadline (they take as long as the data
// does) but still the per-write one, so a client that stops reading is cut
// off.
func (s *Server) boundRequest(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/graphql" && websocketHandshake(r) {
			next.ServeHTTP(w, r)
			return
		}
		if s.cfg.WriteIdleTimeout > 0 {
			w = &writeDeadline{ResponseWriter: w, rc: http.NewResponseController(w), idle: s.cfg.WriteIdleTimeout}
		}
		if s.cfg.RequestTimeout > 0 && !strings.HasPrefix(r.URL.Path, "/api/export/") {
			ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		next.ServeHTTP(w, r)
	})
}

// websocketHandshake reports whether r is a websocket opening handshake as
// RFC 6455 (section 4.1) has a client send it. Headers alone prove nothing
// (anyone can add Upgrade: websocket to any request), but a request
// missing any of these is refused by the upgrader, never made long-lived.
func websocketHandshake(r *http.Request) bool {
	if r.Method != http.MethodGet || !websocket.IsWebSocketUpgrade(r) ||
		r.Header.Get("Sec-WebSocket-Version") != "13" {
		return false
	}
	nonce, err := base64.StdEncoding.DecodeString(r.Header.Get("Sec-WebSocket-Key"))
	return err == nil && len(nonce) == 16
}

// writeDeadline moves the connection's write deadline before every write.
type writeDeadline struct {
	http.ResponseWriter
	rc   *http.ResponseController
	idle time.Duration
}

func (w *writeDeadline) Write(b []byte) (int, error) {
	// Not every writer supports deadlines (HTTP/2 over httptest's
	// recorder); then there is nothing to move.
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.idle))
	return w.ResponseWriter.Write(b)
}

func (w *writeDeadline) Flush() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.idle))
	_ = w.rc.Flush()
}

func (w *writeDeadline) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// checkBodyStrings applies the service's one rule for client strings (no
// NUL, bounded length: input.CheckString) to every string of a REST body.
func checkBodyStrings(obj map[string]json.RawMessage) error {
	for k, raw := range obj {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			continue // the field's own decoding reports it
		}
		if err := input.CheckStrings(k, v); err != nil {
			return err
		}
	}
	return nil
}

// checkQuery applies the same rule to every query parameter, for all
// routes (REST paging, export searches and filters).
func (s *Server) checkQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, vs := range r.URL.Query() {
			for _, v := range append(vs, k) {
				if err := input.CheckString(k, v); err != nil {
					writeRESTErr(w, r, err, nil)
					return
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}
