// Package premium describes the six premium feed kinds of the spec: which
// settings the user may change on each, their ranges and defaults, which
// credentials a feed needs before it can be enabled, and the shape of the
// feed-list platform's endpoint, and the sources of the kinds this build can
// fetch. Like every source it imports only ioc of ours: the runner and the
// API read these rules, and the store keeps the feeds.
package premium

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/source"
)

// Kind names a premium feed kind. It is stored in feeds.kind and is the
// GraphQL enum value.
type Kind string

// The six kinds of the spec, named by what they are rather than by vendor.
const (
	DarkWebTAXII       Kind = "DARK_WEB_TAXII"
	ThreatPlatform     Kind = "THREAT_PLATFORM"
	ThreatIntelAPI     Kind = "THREAT_INTEL_API"
	RiskList           Kind = "RISK_LIST"
	FeedList           Kind = "FEED_LIST"
	EndpointProtection Kind = "ENDPOINT_PROTECTION"
)

// Field names a setting of a premium feed, as the GraphQL PremiumFeedField
// enum does.
type Field string

// The settings. Username and ClientID are kept in the feed's username;
// Password, APIKey and ClientSecret in its sealed secret; APIEndpoint is
// split into the collection URL (without its key) and the sealed key.
const (
	Name             Field = "NAME"
	Category         Field = "CATEGORY"
	CollectionURL    Field = "COLLECTION_URL"
	Username         Field = "USERNAME"
	Password         Field = "PASSWORD"
	APIKey           Field = "API_KEY"
	ClientID         Field = "CLIENT_ID"
	ClientSecret     Field = "CLIENT_SECRET"
	APIEndpoint      Field = "API_ENDPOINT"
	PollingFrequency Field = "POLLING_FREQUENCY"
	BackfillDays     Field = "BACKFILL_DAYS"
	RetentionPeriod  Field = "RETENTION_PERIOD"
)

// Range is an inclusive bound of a numeric setting.
type Range struct{ Min, Max int }

// Contains reports whether n is within r.
func (r Range) Contains(n int) bool { return n >= r.Min && n <= r.Max }

// Limits of the spec for premium feeds.
var (
	pollingRange   = Range{1, 24}
	backfillRange  = Range{1, 30}
	retentionRange = Range{1, 360}
)

// Spec is how the feeds of one kind are configured.
type Spec struct {
	Kind        Kind
	Title       string // the feed's name for kinds with one feed; the form's title
	Description string // read-only on the feed
	Category    string // the category of the kind's one feed ("" for creatable kinds)

	Editable         []Field // settings the user may change, in form order
	RequiredToEnable []Field // settings that must be set before enabling

	Polling   Range
	Backfill  *Range // nil: no backfill for this kind
	Retention *Range // nil: fixed (FixedRetention) or not settable

	// FixedRetention is the retention of kinds whose retention cannot change.
	FixedRetention int

	DefaultPolling, DefaultBackfill, DefaultRetention int

	// Creatable kinds have no feed until the user creates one, at most
	// MaxFeeds of them; the others have exactly one, delivered disabled.
	Creatable  bool
	MaxFeeds   int
	Categories []string // categories a creatable kind's feed may take
	NamePrefix string   // prefix of a creatable kind's feed names

	// PerPoll is the most IoCs one poll brings in; 0 for no bound.
	PerPoll int64
	// MaxBytes bounds a downloaded input file; 0 for the source's default.
	MaxBytes int64
	// ConstantRate says that the kind's writes are spread at the server's
	// constant rate (the runner's Category.Rate), resuming across polls.
	ConstantRate bool
}

// defaultRetention is the retention of kinds whose retention the user
// cannot set and the spec does not fix (our choice, docs/decisions.md).
const defaultRetention = 90

// FeedListCategory is the one category the feed-list platform offers in this
// release.
const FeedListCategory = "Threat Intelligence"

// MaxFeedListFeeds is the spec's bound on feed-list platform feeds.
const MaxFeedListFeeds = 10

// specs are the six kinds in the order the dashboard lists them.
var specs = []Spec{
	{
		Kind: DarkWebTAXII, Title: "Dark-web Intelligence (TAXII)", Category: "TAXII",
		Description:      "Indicators from a dark-web intelligence service, over TAXII 2.1.",
		Editable:         []Field{CollectionURL, Username, Password, PollingFrequency, BackfillDays},
		RequiredToEnable: []Field{CollectionURL, Username, Password},
		Polling:          pollingRange, Backfill: &backfillRange, FixedRetention: defaultRetention,
		DefaultPolling: 24, DefaultBackfill: 7, DefaultRetention: defaultRetention, MaxFeeds: 1,
	},
	{
		Kind: ThreatPlatform, Title: "Threat Platform", Category: "API",
		Description:      "Indicators from a threat-intelligence platform, with a username and API key.",
		Editable:         []Field{Username, APIKey, PollingFrequency, BackfillDays},
		RequiredToEnable: []Field{Username, APIKey},
		Polling:          pollingRange, Backfill: &backfillRange, FixedRetention: defaultRetention,
		DefaultPolling: 24, DefaultBackfill: 7, DefaultRetention: defaultRetention, MaxFeeds: 1,
	},
	{
		Kind: ThreatIntelAPI, Title: "Threat Intelligence API", Category: "API",
		Description:      "Indicators from a threat-intelligence service keyed by API key.",
		Editable:         []Field{APIKey, PollingFrequency, BackfillDays, RetentionPeriod},
		RequiredToEnable: []Field{APIKey},
		Polling:          pollingRange, Backfill: &backfillRange, Retention: &retentionRange,
		DefaultPolling: 24, DefaultBackfill: 7, DefaultRetention: defaultRetention, MaxFeeds: 1,
	},
	{
		Kind: RiskList, Title: "Risk Lists", Category: "API",
		Description: "Risk lists keyed by API key. Retention is fixed at 14 days; a full ingestion " +
			"may take up to a week because indicators come in at a constant rate.",
		Editable:         []Field{APIKey, PollingFrequency},
		RequiredToEnable: []Field{APIKey},
		Polling:          pollingRange, FixedRetention: 14,
		DefaultPolling: 24, DefaultRetention: 14, MaxFeeds: 1, ConstantRate: true,
	},
	{
		Kind: FeedList, Title: "Feed-list Platform",
		Description: "Feeds from a feed-list platform (for example per industry or geography), " +
			"each an endpoint URL carrying its API key.",
		Editable:         []Field{Category, Name, APIEndpoint, PollingFrequency, RetentionPeriod},
		RequiredToEnable: []Field{APIEndpoint},
		Polling:          pollingRange, Retention: &retentionRange,
		DefaultPolling: 24, DefaultRetention: defaultRetention,
		Creatable: true, MaxFeeds: MaxFeedListFeeds, Categories: []string{FeedListCategory},
		NamePrefix: "FeedList_", PerPoll: 50000, MaxBytes: 100 << 20,
	},
	{
		Kind: EndpointProtection, Title: "Endpoint Protection Intelligence", Category: "API",
		Description:      "Indicators from an endpoint-protection intelligence collection, with a client ID and secret.",
		Editable:         []Field{ClientID, ClientSecret, PollingFrequency, BackfillDays},
		RequiredToEnable: []Field{ClientID, ClientSecret},
		Polling:          pollingRange, Backfill: &backfillRange, FixedRetention: defaultRetention,
		DefaultPolling: 24, DefaultBackfill: 7, DefaultRetention: defaultRetention, MaxFeeds: 1,
		PerPoll: 50000,
	},
}

// Specs returns the six kinds, in the dashboard's order.
func Specs() []Spec { return append([]Spec(nil), specs...) }

// Lookup returns the spec of kind k.
func Lookup(k Kind) (Spec, bool) {
	for _, s := range specs {
		if s.Kind == k {
			return s, true
		}
	}
	return Spec{}, false
}

// VendorKind declares premium kind k read from a vendor's fixed API (see
// feedhttp.VendorKind). Its spec's per-poll bound is the runner's limit:
// the sink refuses what is over it, and the source, checkpointed, goes on
// from there at the next poll.
func VendorKind(k Kind, newSource func(feedhttp.Settings) source.Source) source.Kind {
	spec, _ := Lookup(k)
	kind := feedhttp.VendorKind(string(k), newSource)
	kind.RunLimit = spec.PerPoll
	return kind
}

// Edits reports whether f is one of the settings the user may change.
func (s Spec) Edits(f Field) bool {
	for _, e := range s.Editable {
		if e == f {
			return true
		}
	}
	return false
}

// InitialRetention is the retention a feed of this kind takes when it is
// created or reset.
func (s Spec) InitialRetention() int {
	if s.FixedRetention > 0 {
		return s.FixedRetention
	}
	return s.DefaultRetention
}

// FeedName is the stored name of a creatable kind's feed: the prefix and
// the name the user gave, trimmed, the prefix not doubled.
func (s Spec) FeedName(name string) string {
	name = strings.TrimSpace(name)
	return s.NamePrefix + strings.TrimPrefix(name, s.NamePrefix)
}

// endpointFile is the last path element of a feed-list endpoint:
// <feed_collection_id>.json.
var endpointFile = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}\.json$`)

// Endpoint is a feed-list platform endpoint split into what may be shown and
// what must be sealed.
type Endpoint struct {
	// URL is the endpoint without its key, as the feed shows it.
	URL string
	// Key is the API key carried by the endpoint.
	Key string
	// CollectionID is the feed collection's id from the file name.
	CollectionID string
}

// ParseEndpoint checks the spec's shape of a feed-list endpoint,
// {premium_endpoint_base}/<feed_collection_id>.json?key=<api_key>&v=2, and
// splits off its key. When base is set, the endpoint must be under it.
func ParseEndpoint(raw, base string) (Endpoint, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return Endpoint{}, fmt.Errorf("must be an http or https URL of the form <base>/<feed_collection_id>.json?key=<api_key>&v=2")
	}
	if u.User != nil || u.Fragment != "" {
		return Endpoint{}, fmt.Errorf("must not carry user information or a fragment")
	}
	file := path.Base(u.Path)
	if !endpointFile.MatchString(file) {
		return Endpoint{}, fmt.Errorf("must end with /<feed_collection_id>.json (letters, digits, _ and -)")
	}
	q := u.Query()
	key := q.Get("key")
	if key == "" {
		return Endpoint{}, fmt.Errorf("must carry the API key as ?key=<api_key>")
	}
	if q.Get("v") != "2" {
		return Endpoint{}, fmt.Errorf("must ask for version 2 of the feed (v=2)")
	}
	if base = strings.TrimSuffix(strings.TrimSpace(base), "/"); base != "" && !underBase(u, base) {
		return Endpoint{}, fmt.Errorf("must be under %s", base)
	}
	q.Del("key")
	shown := *u
	shown.RawQuery = q.Encode()
	return Endpoint{URL: shown.String(), Key: key, CollectionID: strings.TrimSuffix(file, ".json")}, nil
}

// underBase says whether u is under the operator's base URL: same scheme
// and host, and a path that no server could read as one outside the base's
// (no dot segment or encoded slash, "%2e%2e" included), since the base is
// what keeps tenants' endpoints on the vendor's API.
func underBase(u *url.URL, base string) bool {
	b, err := url.Parse(base)
	if err != nil || !strings.EqualFold(u.Scheme, b.Scheme) || !strings.EqualFold(u.Host, b.Host) {
		return false
	}
	if egress.AmbiguousPath(u) != "" {
		return false
	}
	return strings.HasPrefix(path.Clean("/"+u.Path)+"/", strings.TrimSuffix(b.Path, "/")+"/")
}

// WithKey puts key back into an endpoint shown without it.
func WithKey(shown, key string) (string, error) {
	u, err := url.Parse(shown)
	if err != nil {
		return "", fmt.Errorf("premium: unable to parse endpoint: %w", err)
	}
	q := u.Query()
	q.Set("key", key)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
