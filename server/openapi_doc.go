package server

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"

	"github.com/tifeeds/tifeeds/server/openapi"
)

// openAPIDocument serves the REST API's OpenAPI document. Its ETag is a
// hash of the content, so a client or gateway revalidating its copy gets
// 304 until an upgrade changes the document.
func openAPIDocument() http.Handler {
	sum := sha256.Sum256(openapi.Document)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("ETag", etag)
		h.Set("Cache-Control", "no-cache")
		if etagMatches(r.Header.Get("If-None-Match"), etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Type", "application/json")
		_, _ = w.Write(openapi.Document)
	})
}
