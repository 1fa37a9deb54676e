// Package input holds what the REST and GraphQL edges both take from a
// client before any handler runs: the bounds on every string a client sends,
// and the parameters of an export as decoded from its URL.
package input

import (
	"fmt"
	"strings"

	"github.com/tifeeds/tifeeds/store"
)

// MaxStringBytes bounds every string a client sends, REST or GraphQL,
// unless longStrings names its field: names, URLs, searches and indicator
// values are all far shorter. SQLite refuses LIKE patterns over 50,000
// bytes; PostgreSQL refuses NUL in text; both used to surface as 500s.
const MaxStringBytes = 4096

// longStrings are the free-text fields allowed more than MaxStringBytes,
// by the name they have in REST and in GraphQL. The store still applies
// its own, tighter, rule to each (a logo of 256 KiB).
var longStrings = map[string]int{
	"info":            64 << 10,
	"idpCertificate":  64 << 10,
	"idp_certificate": 64 << 10,
	"idpMetadata":     256 << 10,
	"idp_metadata":    256 << 10,
	"logo":            512 << 10,
	"tgrp_logo":       512 << 10,
	// importTenantAssetsCsv's upload (notify.MaxCSVBytes).
	"csv": 1 << 20,
}

// CheckString refuses a string with a NUL byte or longer than its field's
// limit, with a malformed store.ValidationError naming field.
func CheckString(field, v string) error {
	limit := MaxStringBytes
	if n, ok := longStrings[field]; ok {
		limit = n
	}
	switch {
	case len(v) > limit:
		return &store.ValidationError{Field: field, Message: fmt.Sprintf("must have at most %d bytes, not %d", limit, len(v)), Malformed: true}
	case strings.IndexByte(v, 0) >= 0:
		return &store.ValidationError{Field: field, Message: "must not contain NUL bytes", Malformed: true}
	}
	return nil
}

// CheckStrings applies CheckString to every string (and object key) of a
// decoded JSON value; field names the value, and nested objects name their
// own members.
func CheckStrings(field string, v any) error {
	switch v := v.(type) {
	case string:
		return CheckString(field, v)
	case []any:
		for _, e := range v {
			if err := CheckStrings(field, e); err != nil {
				return err
			}
		}
	case map[string]any:
		for k, e := range v {
			if err := CheckString(field, k); err != nil {
				return err
			}
			if err := CheckStrings(k, e); err != nil {
				return err
			}
		}
	}
	return nil
}
