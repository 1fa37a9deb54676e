// Package stix writes tifeeds' IoCs as STIX 2.1 objects: one indicator per
// IoC with a deterministic id and a pattern for its kind, created by an
// identity that stands for the tifeeds installation.
package stix

import (
	"net/netip"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/tifeeds/tifeeds/ioc"
)

// SpecVersion is the STIX version of every object written.
const SpecVersion = "2.1"

// Namespace is the UUIDv5 namespace of tifeeds' STIX ids. It is fixed for
// good: an indicator's id is UUIDv5(Namespace, kind+":"+value) on every
// installation and every pull, so consumers deduplicate across pulls and
// across tifeeds instances sharing the same IoC. It is itself
// UUIDv5(URL namespace, "urn:tifeeds:stix").
var Namespace = uuid.MustParse("d3b97a80-4ee4-5946-87a4-ea88dab46d8d")

// TimeLayout is how STIX timestamps are written: RFC 3339 in UTC with
// microseconds, the precision tifeeds stores.
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// Timestamp is t as a STIX timestamp.
func Timestamp(t time.Time) string { return t.UTC().Format(TimeLayout) }

// IndicatorID is the STIX id of the indicator of an IoC.
func IndicatorID(kind ioc.Kind, value string) string {
	return "indicator--" + uuid.NewSHA1(Namespace, []byte(string(kind)+":"+value)).String()
}

// Pattern types.
const (
	PatternSTIX     = "stix"
	PatternSuricata = "suricata"
)

// Pattern is the pattern and pattern type of an IoC. A rule's pattern is its
// signature text (when stored; else its value) in Suricata's language.
func Pattern(kind ioc.Kind, value, text string) (pattern, patternType string) {
	var path string
	switch kind {
	case ioc.URL:
		path = "url:value"
	case ioc.IP:
		path = "ipv4-addr:value"
		if a, err := netip.ParseAddr(value); err == nil && a.Is6() && !a.Is4In6() {
			path = "ipv6-addr:value"
		}
	case ioc.Domain:
		path = "domain-name:value"
	case ioc.MD5:
		path = "file:hashes.MD5"
	case ioc.SHA1:
		path = "file:hashes.'SHA-1'"
	case ioc.SHA256:
		path = "file:hashes.'SHA-256'"
	case ioc.CertSHA1:
		path = "x509-certificate:hashes.'SHA-1'"
	case ioc.Rule:
		if text != "" {
			return text, PatternSuricata
		}
		return value, PatternSuricata
	default:
		// Unknown kinds are not stored (ioc.Normalize refuses them); an
		// artifact payload would be wrong, so say what it is.
		path = "x-tifeeds-" + string(kind) + ":value"
	}
	return "[" + path + " = " + Quote(value) + "]", PatternSTIX
}

// Quote is v as a STIX patterning string literal: in single quotes, with
// backslashes and quotes escaped (STIX 2.1 part 9.2).
func Quote(v string) string {
	var b strings.Builder
	b.Grow(len(v) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' || v[i] == '\'' {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	b.WriteByte('\'')
	return b.String()
}
