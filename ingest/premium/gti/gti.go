// Package gti reads Google Threat Intelligence threat lists (the
// THREAT_INTEL_API premium kind): one package per list and UTC hour,
// GET https://www.virustotal.com/api/v3/threat_lists/<list>/<YYYYMMDDHH>
// with x-apikey, each {"iocs": [{"data": {...}}, ...]}. The cursor keeps,
// per list, the last hour read, so a list that fails does not hold the
// others back and resumes from its own hour.
package gti

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// Host is the API host.
const Host = "www.virustotal.com"

// Lists are the threat lists read, in order.
var Lists = []string{"malware", "phishing", "malicious-network-infrastructure"}

const (
	// hourLayout names an hour package.
	hourLayout = "2006010215"
	// DefaultMaxBytes caps one hour package (at most a few thousand
	// objects of a few KB).
	DefaultMaxBytes = 256 << 20
	// DefaultFirstWindow is how far back a first run reads when the feed
	// has no backfill bound.
	DefaultFirstWindow = 24 * time.Hour
	// DefaultGrace is how long after its hour ends a package may still be
	// unpublished: a 404 for a newer hour stops the list there (it is read
	// at the next poll), a 404 for an older one is an hour with nothing,
	// passed over.
	DefaultGrace = 3 * time.Hour
)

// Source reads the threat lists. Every request goes through Client (the
// server's egress policy and feed mirror); the URLs are the vendor's own.
type Source struct {
	feedhttp.Settings
	// Knobs for tests; zero values are safe defaults.
	MaxBytes int64
	Grace    time.Duration
}

// URL is the address of list's package for hour.
func URL(list string, hour time.Time) string {
	return "https://" + Host + "/api/v3/threat_lists/" + list + "/" + hour.UTC().Format(hourLayout)
}

// SourceName is the Indicator.Source of a list's values.
func SourceName(list string) string { return "gti-" + list }

// cursor is the last hour read per list ("YYYYMMDDHH").
type cursor map[string]string

func (c cursor) String() string {
	b, _ := json.Marshal(map[string]string(c))
	return string(b)
}

// Fetch walks the threat lists with the feed's API key (req.Feed.Password).
func (s *Source) Fetch(ctx context.Context, req source.Request, sink source.Sink) error {
	return source.Walk(s.fetch).Fetch(ctx, req, sink)
}

// fetch reads every list's hour packages after its cursor (first run:
// from since, or DefaultFirstWindow ago) up to the last hour ended,
// checkpointing after each. A list that fails does not stop the others:
// the run then ends with an *ioc.PartialFailure naming it.
func (s *Source) fetch(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
	cur, since, key := req.Cursor, req.Since, req.Feed.Password // key: sent as x-apikey
	if key == "" {
		return cur, ioc.Fail(ioc.InvalidCredentials, errors.New("gti: no API key is set: set the feed's API key"))
	}
	c := cursor{}
	if cur != "" && json.Unmarshal([]byte(cur), &c) != nil {
		c = cursor{}
	}
	now := s.now().UTC()
	last := now.Truncate(time.Hour).Add(-time.Hour) // the last hour that ended
	if since.IsZero() {
		since = now.Add(-DefaultFirstWindow)
	}
	var failed []ioc.SubFailure
	for _, list := range Lists {
		from := since.UTC().Truncate(time.Hour)
		if h, err := time.Parse(hourLayout, c[list]); err == nil {
			from = h.Add(time.Hour)
		}
		err := s.list(ctx, key, list, from, last, now, c, sink)
		if err == nil {
			continue
		}
		if ctx.Err() != nil || isSinkErr(err) {
			return c.String(), err
		}
		failed = append(failed, ioc.SubFailure{Name: "threat list " + list, Err: err})
	}
	if len(failed) > 0 {
		if err := sink.Checkpoint(ctx, c.String()); err != nil {
			return c.String(), err
		}
		return c.String(), ioc.Partial(failed)
	}
	return c.String(), nil
}

type sinkErr struct{ error }

func (e sinkErr) Unwrap() error { return e.error }

func isSinkErr(err error) bool {
	var se sinkErr
	return errors.As(err, &se)
}

func (s *Source) list(ctx context.Context, key, list string, from, last, now time.Time, c cursor, sink source.Sink) error {
	g := &feedhttp.Getter{Settings: s.Settings, Who: "gti " + list, Secret: key,
		Header:      http.Header{"X-Apikey": {key}, "User-Agent": {"tifeeds"}},
		Credentials: "check the feed's API key"}
	grace := feedhttp.Or(s.Grace, DefaultGrace)
	for h := from; !h.After(last); h = h.Add(time.Hour) {
		u := URL(list, h)
		resp, err := g.Get(ctx, u, feedhttp.Validators{})
		if err != nil && ctx.Err() == nil && isNotFound(err) {
			if now.Sub(h.Add(time.Hour)) < grace {
				return nil // not published yet: the next poll asks again
			}
			c[list] = h.Format(hourLayout) // an hour with no package
			if err := sink.Checkpoint(ctx, c.String()); err != nil {
				return sinkErr{err}
			}
			continue
		}
		if err != nil {
			return err
		}
		body := feedhttp.NewBody(sink, resp, feedhttp.Or(s.MaxBytes, DefaultMaxBytes))
		err = parse(ctx, list, body, sink)
		feedhttp.Close(resp)
		if err != nil {
			if isSinkErr(err) {
				return err
			}
			return g.BodyFailure(ctx, "the package "+h.Format(hourLayout), body, err)
		}
		c[list] = h.Format(hourLayout)
		if err := sink.Checkpoint(ctx, c.String()); err != nil {
			return sinkErr{err}
		}
	}
	return nil
}

// isNotFound tells the vendor's 404 (an hour without a package) from the
// other Invalid URL failures (a destination the egress policy refused).
func isNotFound(err error) bool {
	return ioc.FailureOf(err) == ioc.InvalidURL && strings.Contains(err.Error(), "answered 404")
}

// object is one entry of a package.
type object struct {
	Data struct {
		ID         string `json:"id"`
		Type       string `json:"type"`
		Attributes struct {
			URL           string   `json:"url"`
			Tags          []string `json:"tags"`
			GTIAssessment struct {
				ThreatScore struct {
					Value *int `json:"value"`
				} `json:"threat_score"`
				Verdict struct {
					Value string `json:"value"`
				} `json:"verdict"`
			} `json:"gti_assessment"`
		} `json:"attributes"`
		ContextAttributes struct {
			Tags []string `json:"tags"`
		} `json:"context_attributes"`
	} `json:"data"`
}

// parse streams the "iocs" array of a package into sink.
func parse(ctx context.Context, list string, body *feedhttp.Body, sink source.Sink) error {
	dec := json.NewDecoder(body)
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("not a JSON object (%v)", err)
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		if key != "iocs" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return err
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return fmt.Errorf("iocs is not an array (%v)", err)
		}
		var pos int64
		for dec.More() {
			pos++
			var o object
			if err := dec.Decode(&o); err != nil {
				return err
			}
			ind, reason := indicator(list, &o)
			if reason != "" {
				sink.Rejected(pos, reason)
				continue
			}
			if err := sink.Indicator(ctx, ind); err != nil {
				return sinkErr{err}
			}
		}
		if _, err := dec.Token(); err != nil {
			return err
		}
	}
	_, err := dec.Token()
	return err
}

func indicator(list string, o *object) (ioc.Indicator, string) {
	d := &o.Data
	a := &d.Attributes
	if a.GTIAssessment.Verdict.Value == "VERDICT_BENIGN" {
		return ioc.Indicator{}, "skipped: benign verdict"
	}
	var kind ioc.Kind
	raw := d.ID
	switch d.Type {
	case "ip_address":
		kind = ioc.IP
	case "domain":
		kind = ioc.Domain
	case "url":
		kind, raw = ioc.URL, a.URL
	case "file":
		kind = ioc.SHA256
	default:
		return ioc.Indicator{}, fmt.Sprintf("skipped: %q is not a kind tifeeds keeps", d.Type)
	}
	value, err := ioc.Normalize(kind, raw)
	if err != nil {
		return ioc.Indicator{}, fmt.Sprintf("skipped: %q is not a usable %s: %v", raw, kind, err)
	}
	score := 50 // no threat score: neither benign nor rated
	if v := a.GTIAssessment.ThreatScore.Value; v != nil {
		score = min(max(*v, 0), 100)
	}
	tags := []string{list}
	for _, t := range slices.Concat(d.ContextAttributes.Tags, a.Tags) {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" && t != "none" && !slices.Contains(tags, t) {
			tags = append(tags, t)
		}
	}
	return ioc.Indicator{Kind: kind, Value: value, Source: SourceName(list), Score: score, Tags: tags}, ""
}

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// Kind declares the ThreatIntelAPI premium kind.
func Kind() source.Kind {
	return premium.VendorKind(premium.ThreatIntelAPI, func(s feedhttp.Settings) source.Source { return &Source{Settings: s} })
}
