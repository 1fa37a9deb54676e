// Package taxiisrv is tifeeds' read-only TAXII 2.1 server: discovery, one
// API root, a collection of every indicator and one per IoC kind, their
// objects, manifests and versions, paged along the store's change order.
// Authentication is the caller's (package server wraps it); this package
// assumes an authenticated request.
package taxiisrv

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
)

// Media types of TAXII 2.1 (section 1.6.8) and STIX 2.1.
const (
	MediaType     = "application/taxii+json;version=2.1"
	STIXMediaType = "application/stix+json;version=2.1"
)

// acceptable reports whether an Accept header lets us answer with
// MediaType: absent, a wildcard, or application/taxii+json without a
// version or with version 2.1 (TAXII 2.1 section 1.6.8.1).
func acceptable(header string) bool {
	if strings.TrimSpace(header) == "" {
		return true
	}
	for _, rng := range strings.Split(header, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(rng))
		if err != nil {
			continue
		}
		if q, ok := params["q"]; ok {
			if f, err := strconv.ParseFloat(q, 64); err != nil || f <= 0 {
				continue
			}
		}
		switch mt {
		case "*/*", "application/*":
			return true
		case "application/taxii+json":
			if v, ok := params["version"]; !ok || v == "2.1" {
				return true
			}
		}
	}
	return false
}

// isTAXIIContent reports whether a request body's Content-Type is TAXII 2.1.
func isTAXIIContent(header string) bool {
	mt, params, err := mime.ParseMediaType(header)
	return err == nil && mt == "application/taxii+json" && (params["version"] == "" || params["version"] == "2.1")
}

// Error is a TAXII 2.1 error message (section 3.6.1).
type Error struct {
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
	HTTPStatus  string `json:"http_status"`
}

// WriteError answers status with a TAXII error message.
func WriteError(w http.ResponseWriter, status int, title, description string) {
	writeJSON(w, status, Error{Title: title, Description: description, HTTPStatus: strconv.Itoa(status)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", MediaType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// Answers depend on the caller and change with every ingestion.
	w.Header().Set("Cache-Control", "private, no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}
