// Package threatfox reads abuse.ch ThreatFox (EMERGING_THREAT): the CSV
// export of recent indicators (command and control addresses, payload
// URLs and domains, file hashes), read incrementally by first_seen_utc.
package threatfox

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/ingest/internal/abusech"
	"github.com/tifeeds/tifeeds/ingest/internal/csvtable"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// List is the Source of every indicator. The export is incremental: an
// indicator that drops out of the recent window has not been withdrawn.
const List = "threatfox"

// URL is the vendor's export, fixed.
const URL = "https://threatfox.abuse.ch/export/csv/recent/"

const (
	// DefaultScore is the score of a row without a usable
	// confidence_level.
	DefaultScore = 50
	// CompromisedScore caps the score of an indicator that is a
	// compromised legitimate asset (is_compromised): blocking it hurts its
	// owner's users too.
	CompromisedScore = 30
	// DefaultMaxBytes caps the export: the recent window (48 hours) is a
	// few MB today.
	DefaultMaxBytes = 128 << 20
)

// Defaults of the retry knobs of Source: abuse.ch's.
const (
	DefaultMaxRetries   = abusech.DefaultMaxRetries
	DefaultMaxRetryWait = abusech.DefaultMaxRetryWait
	DefaultRetryBackoff = abusech.DefaultRetryBackoff
)

// Source reads ThreatFox. Every request goes through Client (the server's
// egress policy and feed mirror); the URL is abuse.ch's own, fixed.
type Source struct {
	// Client: never nil in the server. The retry knobs are taken as
	// abusech.Conn's: 0 takes the package's Defaults.
	feedhttp.Settings

	// MaxBytes caps the export; 0: DefaultMaxBytes.
	MaxBytes int64
}

// state is the cursor: the latest first_seen_utc read, the ioc_ids first
// seen in that second (so a row of the same second is read once), and the
// export's validators.
type state struct {
	Seen   string              `json:"seen,omitempty"`
	IDs    []string            `json:"ids,omitempty"`
	Export feedhttp.Validators `json:"export"`
}

func parseState(cursor string) state { return abusech.ParseCursor[state](cursor) }

func (st state) String() string { return abusech.Cursor(st) }

// Fetch walks the export with the abuse.ch key (req.Feed.Key).
func (s *Source) Fetch(ctx context.Context, req source.Request, sink source.Sink) error {
	return source.Walk(s.fetch).Fetch(ctx, req, sink)
}

// fetch reads the rows first seen after the cursor (on the first run,
// since bounds them) and hands their indicators to sink. The export lists
// the newest first, so no row before the last is a point to resume from:
// the cursor moves, and is checkpointed, once the whole export is read.
func (s *Source) fetch(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
	cursor, since := req.Cursor, req.Since
	st := parseState(cursor)
	g := s.conn(req.Feed.Key).Getter("threatfox")
	next := st
	v, unchanged, err := abusech.Download(ctx, g, URL, st.Export, feedhttp.Or(s.MaxBytes, DefaultMaxBytes),
		"the export", sink, func(r io.Reader) (err error) {
			next, err = parse(ctx, r, st, since, sink)
			return err
		})
	switch {
	case err != nil:
		return cursor, err
	case unchanged:
		return cursor, ioc.ErrUnchanged
	}
	next.Export = v
	if err := sink.Checkpoint(ctx, next.String()); err != nil {
		return cursor, err
	}
	return next.String(), nil
}

// export is ThreatFox's.
var export = abusech.Export{Who: "threatfox", File: "the export", ID: "ioc_id", Time: "first_seen_utc",
	Columns: []string{"ioc_value", "ioc_type"}}

// parse reads a ThreatFox CSV export and hands sink the indicators of the
// rows first seen after after's cursor (with none, since bounds them),
// returning the state moved past them.
func parse(ctx context.Context, r io.Reader, after state, since time.Time, sink source.Sink) (state, error) {
	m, err := export.Read(ctx, r, abusech.Mark{At: after.Seen, IDs: after.IDs}, since, sink, indicator)
	after.Seen, after.IDs = m.At, m.IDs
	return after, err
}

// indicator maps one row, or says why it is not used. Only ioc_value
// becomes an indicator: reference (a report URL) is context.
func indicator(t *csvtable.Table, rec []string) (ioc.Indicator, string) {
	typ := strings.ToLower(t.Get(rec, "ioc_type"))
	raw := t.Get(rec, "ioc_value")
	var (
		kind ioc.Kind
		port string
	)
	switch typ {
	case "ip:port":
		host, p, ok := splitHostPort(raw)
		if !ok {
			return ioc.Indicator{}, fmt.Sprintf("ip:port %q has no port", raw)
		}
		kind, raw, port = ioc.IP, host, p
	case "domain":
		kind = ioc.Domain
	case "url":
		kind = ioc.URL
	case "md5_hash", "sha1_hash", "sha256_hash":
		// The value's length names its algorithm: a 32-digit value under
		// sha256_hash is an MD5, whatever the key says, and is kept as one.
		var ok bool
		if kind, ok = ioc.HashKind(raw); !ok {
			return ioc.Indicator{}, fmt.Sprintf("%s of %d characters is not an MD5, SHA1 or SHA256", typ, len(raw))
		}
	case "":
		return ioc.Indicator{}, "no ioc_type"
	default:
		return ioc.Indicator{}, fmt.Sprintf("skipped: %s is not a kind tifeeds keeps", typ)
	}
	v, err := ioc.Normalize(kind, raw)
	if err != nil {
		return ioc.Indicator{}, err.Error()
	}
	score := DefaultScore
	if c, err := strconv.Atoi(t.Get(rec, "confidence_level")); err == nil {
		score = min(max(c, 0), 100)
	}
	if b, _ := strconv.ParseBool(t.Get(rec, "is_compromised")); b {
		score = min(score, CompromisedScore)
	}
	tg := abusech.Tags(t.Get(rec, "malware_printable"), t.Get(rec, "fk_malware"), t.Get(rec, "malware_alias"),
		t.Get(rec, "threat_type"), t.Get(rec, "tags"))
	if port != "" {
		tg = append(tg, "port:"+port)
	}
	return ioc.Indicator{Kind: kind, Value: v, Source: List, Score: score, Tags: tg}, ""
}

// splitHostPort splits ThreatFox's ip:port. IPv6 comes without brackets
// ("2001:db8::5:8443"): the port is after the last colon.
func splitHostPort(v string) (host, port string, ok bool) {
	if strings.HasPrefix(v, "[") {
		h, p, err := net.SplitHostPort(v)
		if err != nil {
			return "", "", false
		}
		host, port = h, p
	} else {
		i := strings.LastIndexByte(v, ':')
		if i < 0 {
			return "", "", false
		}
		host, port = v[:i], v[i+1:]
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n > 65535 || port != strconv.Itoa(n) {
		return "", "", false
	}
	return host, port, true
}

// conn connects with key, the abuse.ch Auth-Key (--abusech-auth-key), sent
// as the Auth-Key header when set.
func (s *Source) conn(key string) abusech.Conn {
	return abusech.Conn{Settings: s.Settings, Key: key}
}

// Kind declares the EmergingThreat kind.
func Kind() source.Kind {
	return feedhttp.VendorKind(string(builtin.EmergingThreat), func(s feedhttp.Settings) source.Source { return &Source{Settings: s} })
}
