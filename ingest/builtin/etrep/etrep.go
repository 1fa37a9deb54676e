// Package etrep reads Proofpoint's ET reputation lists (builtinKind
// IP_DOMAIN_REPUTATION): with an ET reputation code, the scored IP and
// domain lists iprepdata.json and domainrepdata.json; without one, ET
// Open's compromised-ips.txt. Each is a snapshot list, asked for with
// ETag / Last-Modified so that an unchanged list is not downloaded again.
// Like every built-in source it imports only ioc and the standard library
// and never touches the store.
package etrep

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/internal/jsonstream"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// The lists, named by the Source of their indicators.
const (
	ListIP          = "et-reputation-ip"
	ListDomain      = "et-reputation-domain"
	ListCompromised = "et-compromised"
)

// The vendor's fixed endpoints; --feed-mirror rewrites the hosts. The code
// is a secret in the path: messages show it as ***.
const (
	proBase        = "https://rules.emergingthreatspro.com/"
	compromisedURL = "https://rules.emergingthreats.net/blockrules/compromised-ips.txt"
)

// Retry defaults, for the zero values of Source's knobs.
const (
	DefaultMaxRetries   = feedhttp.DefaultMaxRetries
	DefaultMaxRetryWait = feedhttp.DefaultMaxRetryWait
)

// DefaultMaxListBytes bounds one list's body: the IP list is about 400,000
// entries (some 20 MB); lists are streamed, so this bounds a run's time.
const DefaultMaxListBytes = 256 << 20

// Scores: ET scores run 0-127; the keyless list has none.
const (
	maxETScore       = 127
	scoreCompromised = 70
)

// Source reads the ET reputation lists. Every request goes through Client
// (the server's egress policy and feed mirror); the URLs are the vendor's
// own, fixed.
type Source struct {
	feedhttp.Settings // Client: never nil in the server; tests use vendortest.MirrorClient

	// MaxListBytes bounds one list's body (0: the default).
	MaxListBytes int64
}

type list struct {
	name string
	url  string
	kind ioc.Kind
	json bool // the scored JSON format, else one IP a line
}

// lists are the lists key (--et-reputation-code) opens; "" reads the
// keyless list.
func lists(key string) []list {
	if key == "" {
		return []list{{name: ListCompromised, url: compromisedURL, kind: ioc.IP}}
	}
	base := proBase + url.PathEscape(key) + "/reputation/"
	return []list{
		{name: ListIP, url: base + "iprepdata.json", kind: ioc.IP, json: true},
		{name: ListDomain, url: base + "domainrepdata.json", kind: ioc.Domain, json: true},
	}
}

// Fetch reads the lists the code (req.Feed.Key) opens, or the keyless one.
func (s *Source) Fetch(ctx context.Context, req source.Request, sink source.Sink) error {
	return source.Walk(s.fetch).Fetch(ctx, req, sink)
}

// fetch reads every list that changed since cursor (a JSON object of each
// list's ETag and Last-Modified), hands over its entries and says it is
// complete. It returns ioc.ErrUnchanged when no list changed. since is not
// used: the lists are snapshots.
func (s *Source) fetch(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
	cursor := req.Cursor
	seen := map[string]feedhttp.Validators{}
	if cursor != "" && json.Unmarshal([]byte(cursor), &seen) != nil {
		// Not ours (an older format): download everything once.
		seen = map[string]feedhttp.Validators{}
	}
	// The code is a secret in the path: messages show it as ***.
	g := &feedhttp.Getter{Settings: s.Settings, Who: "etrep", Secret: req.Feed.Key}
	next := map[string]feedhttp.Validators{}
	changed := 0
	for _, l := range lists(req.Feed.Key) {
		v, ok, err := s.read(ctx, g, l, seen[l.name], sink)
		if err != nil {
			return cursor, err
		}
		if ok {
			changed++
		}
		next[l.name] = v
	}
	b, _ := json.Marshal(next)
	if changed == 0 {
		return string(b), ioc.ErrUnchanged
	}
	return string(b), nil
}

// read downloads l unless it is unchanged since prev, and reports whether
// it was read (to its end, then said complete).
func (s *Source) read(ctx context.Context, g *feedhttp.Getter, l list, prev feedhttp.Validators, sink source.Sink) (feedhttp.Validators, bool, error) {
	resp, err := g.Get(ctx, l.url, prev)
	if err != nil {
		return prev, false, err
	}
	defer feedhttp.Close(resp)
	if resp.StatusCode == http.StatusNotModified {
		return prev, false, nil
	}
	v := feedhttp.ValidatorsOf(resp)
	b := feedhttp.NewBody(sink, resp, feedhttp.Or(s.MaxListBytes, DefaultMaxListBytes))
	if l.json {
		err = s.readJSON(ctx, l, b, sink)
	} else {
		err = s.readLines(ctx, l, b, sink)
	}
	if err != nil {
		return prev, false, g.BodyFailure(ctx, g.Shown(l.url), b, err)
	}
	sink.ListComplete(l.name, time.Time{})
	return v, true, nil
}

// readJSON reads {"<value>": {"<category>": "<score>", ...}, ...}.
func (s *Source) readJSON(ctx context.Context, l list, b *feedhttp.Body, sink source.Sink) error {
	dec := json.NewDecoder(b)
	if err := jsonstream.Expect(dec, '{'); err != nil {
		return err
	}
	for n := int64(1); dec.More(); n++ {
		key, err := dec.Token()
		if err != nil {
			return err
		}
		var cats map[string]json.RawMessage
		if err := dec.Decode(&cats); err != nil {
			return err
		}
		raw, _ := key.(string)
		if strings.Contains(raw, "*") {
			// A glob matches names we cannot list; its base domain is not
			// what ET scored.
			sink.Rejected(n, fmt.Sprintf("skipped: the wildcard %q is not a kind tifeeds keeps", raw))
			continue
		}
		value, err := ioc.Normalize(l.kind, raw)
		if err != nil {
			sink.Rejected(n, err.Error())
			continue
		}
		best, tags := -1.0, []string(nil)
		for cat, rawScore := range cats {
			// Scores come as strings or numbers of 0-127; anything else is
			// a field added beside the categories (ports, say), not one.
			sc, err := strconv.ParseFloat(strings.Trim(string(rawScore), `"`), 64)
			if err != nil || sc < 0 || sc > maxETScore || strings.TrimSpace(cat) == "" {
				continue
			}
			best = max(best, sc)
			if t := strings.ToLower(strings.TrimSpace(cat)); !slices.Contains(tags, t) {
				tags = append(tags, t)
			}
		}
		if best < 0 {
			sink.Rejected(n, fmt.Sprintf("%q has no scored category", raw))
			continue
		}
		slices.Sort(tags)
		score := int(math.Round(best * 100 / maxETScore))
		if err := sink.Indicator(ctx, ioc.Indicator{Kind: l.kind, Value: value, Source: l.name, Score: score, Tags: tags}); err != nil {
			return &feedhttp.SinkError{Err: err}
		}
	}
	return jsonstream.Expect(dec, '}')
}

// readLines reads one IP address a line; # starts a comment.
func (s *Source) readLines(ctx context.Context, l list, b *feedhttp.Body, sink source.Sink) error {
	sc := bufio.NewScanner(b)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<10)
	for n := int64(1); sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line == "" {
			continue
		}
		if strings.Contains(line, "/") {
			sink.Rejected(n, fmt.Sprintf("skipped: the network %q is not a kind tifeeds keeps", line))
			continue
		}
		value, err := ioc.Normalize(ioc.IP, line)
		if err != nil {
			sink.Rejected(n, err.Error())
			continue
		}
		ind := ioc.Indicator{Kind: ioc.IP, Value: value, Source: l.name, Score: scoreCompromised, Tags: []string{"compromised"}}
		if err := sink.Indicator(ctx, ind); err != nil {
			return &feedhttp.SinkError{Err: err}
		}
	}
	return sc.Err()
}

// Kind declares the IPDomainReputation kind.
func Kind() source.Kind {
	return feedhttp.VendorKind(string(builtin.IPDomainReputation), func(s feedhttp.Settings) source.Source { return &Source{Settings: s} })
}
