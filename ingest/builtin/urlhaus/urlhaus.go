// Package urlhaus reads abuse.ch's malware URL and SSL certificate lists
// (MALWARE_URL_SSL): URLhaus' csv_recent, read incrementally by its
// dateadded column, and SSLBL's sslblacklist.csv, a snapshot list of the
// SHA1 fingerprints of certificates seen on malware command and control
// servers.
package urlhaus

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/ingest/internal/abusech"
	"github.com/tifeeds/tifeeds/ingest/internal/csvtable"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// The lists read, and the Source of their indicators.
const (
	// ListURLhaus is incremental: a URL that drops out of the recent
	// window has not been withdrawn, so it is never completed as a list
	// and its sightings live out their retention.
	ListURLhaus = "urlhaus"
	// ListSSLBL is a snapshot list, completed after each whole read.
	ListSSLBL = "sslbl"
)

// The vendor URLs, fixed.
const (
	URLhausURL = "https://urlhaus.abuse.ch/downloads/csv_recent/"
	SSLBLURL   = "https://sslbl.abuse.ch/blacklist/sslblacklist.csv"
)

// Scores: a URL still serving malware, one that no longer does, and a
// certificate abuse.ch saw on a command and control server.
const (
	ScoreOnline  = 80
	ScoreOffline = 50
	ScoreCert    = 80
)

// Caps on the bodies, about ten times their size today (csv_recent, 30
// days of URLs: a few tens of MB; sslblacklist.csv: well under 1 MB), so
// that a runaway answer ends the run instead of filling the day.
const (
	DefaultMaxURLhausBytes = 256 << 20
	DefaultMaxSSLBLBytes   = 32 << 20
)

// Defaults of the retry knobs of Source: abuse.ch's.
const (
	DefaultMaxRetries   = abusech.DefaultMaxRetries
	DefaultMaxRetryWait = abusech.DefaultMaxRetryWait
	DefaultRetryBackoff = abusech.DefaultRetryBackoff
)

// Source reads URLhaus and SSLBL. Every request goes through Client (the
// server's egress policy and feed mirror); the URLs are abuse.ch's own,
// fixed.
type Source struct {
	// Client: never nil in the server. The retry knobs are taken as
	// abusech.Conn's: 0 takes the package's Defaults.
	feedhttp.Settings

	// MaxURLhausBytes and MaxSSLBLBytes cap the bodies; 0: the Defaults.
	MaxURLhausBytes, MaxSSLBLBytes int64
}

// state is the cursor: where URLhaus was read up to, and the validators
// of both downloads.
type state struct {
	// Added is the latest dateadded read; IDs the ids of the rows added
	// then, so a row of the same second is read once.
	Added   string              `json:"added,omitempty"`
	IDs     []string            `json:"ids,omitempty"`
	URLhaus feedhttp.Validators `json:"urlhaus"`
	SSLBL   feedhttp.Validators `json:"sslbl"`
}

func parseState(cursor string) state { return abusech.ParseCursor[state](cursor) }

func (st state) String() string { return abusech.Cursor(st) }

// Fetch reads both lists with the abuse.ch key (req.Feed.Key).
func (s *Source) Fetch(ctx context.Context, req source.Request, sink source.Sink) error {
	return source.Walk(s.fetch).Fetch(ctx, req, sink)
}

// fetch reads the URLhaus rows added after the cursor (on the first run,
// those added since since), checkpointing after them, then the whole SSLBL
// list, which it completes. A list that fails does not stop the other:
// Fetch reads both and returns the failure. When both downloads are
// unchanged since the cursor, it returns ioc.ErrUnchanged.
func (s *Source) fetch(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
	st := parseState(req.Cursor)
	var failed []error
	unchangedU, err := s.fetchURLhaus(ctx, s.conn(req.Feed.Key).Getter("urlhaus"), &st, req.Since, sink)
	if err != nil {
		if !isFetchError(err) { // the run ends, or the sink failed
			return st.String(), err
		}
		failed = append(failed, err)
	}
	unchangedS, err := s.fetchSSLBL(ctx, s.conn(req.Feed.Key).Getter("sslbl"), &st, sink)
	if err != nil {
		if !isFetchError(err) {
			return st.String(), err
		}
		failed = append(failed, err)
	}
	switch {
	case len(failed) == 2:
		return st.String(), fmt.Errorf("%w; and %v", failed[0], failed[1])
	case len(failed) == 1:
		return st.String(), failed[0]
	case unchangedU && unchangedS:
		return st.String(), ioc.ErrUnchanged
	}
	return st.String(), nil
}

func isFetchError(err error) bool {
	var fe *ioc.FetchError
	return errors.As(err, &fe)
}

// fetchURLhaus reads csv_recent and moves st past what it handed over.
func (s *Source) fetchURLhaus(ctx context.Context, g *feedhttp.Getter, st *state, since time.Time, sink source.Sink) (unchanged bool, err error) {
	next := *st
	v, unchanged, err := abusech.Download(ctx, g, URLhausURL, st.URLhaus, feedhttp.Or(s.MaxURLhausBytes, DefaultMaxURLhausBytes),
		"the list", sink, func(r io.Reader) (err error) {
			next, err = parseURLhaus(ctx, r, *st, since, sink)
			return err
		})
	if err != nil || unchanged {
		return unchanged, err
	}
	next.URLhaus = v
	*st = next
	// csv_recent lists the newest first, so no row before the last is a
	// point the next run could resume from: checkpoint the whole file.
	return false, sink.Checkpoint(ctx, st.String())
}

// csvRecent is URLhaus' export.
var csvRecent = abusech.Export{Who: "urlhaus", File: "csv_recent", ID: "id", Time: "dateadded", Columns: []string{"url"}}

// parseURLhaus reads a URLhaus CSV download and hands a URL indicator to
// sink for each row added after after's cursor (when it has none, since
// bounds the rows), returning the state moved past the rows read.
func parseURLhaus(ctx context.Context, r io.Reader, after state, since time.Time, sink source.Sink) (state, error) {
	m, err := csvRecent.Read(ctx, r, abusech.Mark{At: after.Added, IDs: after.IDs}, since, sink,
		func(t *csvtable.Table, rec []string) (ioc.Indicator, string) {
			v, err := ioc.Normalize(ioc.URL, t.Get(rec, "url"))
			if err != nil {
				return ioc.Indicator{}, err.Error()
			}
			score := ScoreOffline
			if strings.EqualFold(t.Get(rec, "url_status"), "online") {
				score = ScoreOnline
			}
			return ioc.Indicator{Kind: ioc.URL, Value: v, Source: ListURLhaus, Score: score,
				Tags: abusech.Tags(t.Get(rec, "threat"), t.Get(rec, "tags"))}, ""
		})
	after.Added, after.IDs = m.At, m.IDs
	return after, err
}

// fetchSSLBL reads the whole SSLBL list and completes it.
func (s *Source) fetchSSLBL(ctx context.Context, g *feedhttp.Getter, st *state, sink source.Sink) (unchanged bool, err error) {
	v, unchanged, err := abusech.Download(ctx, g, SSLBLURL, st.SSLBL, feedhttp.Or(s.MaxSSLBLBytes, DefaultMaxSSLBLBytes),
		"the list", sink, func(r io.Reader) error { return ParseSSLBL(ctx, r, sink) })
	if err != nil || unchanged {
		return unchanged, err
	}
	sink.ListComplete(ListSSLBL, time.Time{})
	st.SSLBL = v
	return false, sink.Checkpoint(ctx, st.String())
}

// ParseSSLBL reads sslblacklist.csv and hands a certificate fingerprint
// indicator to sink for each row.
func ParseSSLBL(ctx context.Context, r io.Reader, sink source.Sink) error {
	return abusech.Rows(r, "sslbl", "sslblacklist.csv", []string{"sha1"}, sink, func(t *csvtable.Table, rec []string, line int64) error {
		v, err := ioc.Normalize(ioc.CertSHA1, t.Get(rec, "sha1"))
		if err != nil {
			sink.Rejected(line, err.Error())
			return nil
		}
		return abusech.Hand(ctx, sink, ioc.Indicator{Kind: ioc.CertSHA1, Value: v, Source: ListSSLBL, Score: ScoreCert,
			Tags: abusech.Tags(reasonTag(t.Get(rec, "listingreason")))})
	})
}

// reasonTag turns a listing reason ("Rhadamanthys C&C", "CobaltStrike
// C&C") into the family it names.
func reasonTag(reason string) string {
	r := strings.TrimSpace(reason)
	if base, ok := cutSuffixFold(r, " C&C"); ok && base != "" {
		return base
	}
	return r
}

func cutSuffixFold(s, suffix string) (string, bool) {
	if len(s) >= len(suffix) && strings.EqualFold(s[len(s)-len(suffix):], suffix) {
		return strings.TrimSpace(s[:len(s)-len(suffix)]), true
	}
	return s, false
}

// conn connects with key, the abuse.ch Auth-Key (--abusech-auth-key), sent
// as the Auth-Key header when set.
func (s *Source) conn(key string) abusech.Conn {
	return abusech.Conn{Settings: s.Settings, Key: key}
}

// Kind declares the MalwareURLSSL kind.
func Kind() source.Kind {
	return feedhttp.VendorKind(string(builtin.MalwareURLSSL), func(s feedhttp.Settings) source.Source { return &Source{Settings: s} })
}
