// Package builtin describes the eight built-in feed kinds of the spec: the
// real service each reads (feeds/CATALOG.md), its name, icon and read-only
// description, and the server setting of its key. The sources themselves are
// the packages below it, one per kind; like them this package imports
// nothing of ours.
package builtin

// Kind names a built-in feed kind. It is stored in feeds.kind and is the
// GraphQL BuiltinFeedKind value.
type Kind string

// The eight kinds of the spec, named by what they are rather than by vendor.
const (
	OpenThreatExchange  Kind = "OPEN_THREAT_EXCHANGE"
	Government          Kind = "GOVERNMENT"
	IPDomainReputation  Kind = "IP_DOMAIN_REPUTATION"
	IDSRules            Kind = "IDS_RULES"
	PhishingURLDatabase Kind = "PHISHING_URL_DATABASE"
	MalwareURLSSL       Kind = "MALWARE_URL_SSL"
	PhishingURLFeed     Kind = "PHISHING_URL_FEED"
	EmergingThreat      Kind = "EMERGING_THREAT"
)

// Key is a server setting holding a built-in feed's key: built-in feeds
// cannot be edited, so their keys are flags with an environment fallback.
type Key struct {
	Flag string // without the dashes: "otx-api-key"
	Env  string // "TIFEEDS_OTX_API_KEY"
}

// Setting is how a message names the key: "--otx-api-key (TIFEEDS_OTX_API_KEY)".
func (k Key) Setting() string { return "--" + k.Flag + " (" + k.Env + ")" }

// The key settings. abuse.ch's one key serves two kinds.
var (
	OTXKey          = Key{Flag: "otx-api-key", Env: "TIFEEDS_OTX_API_KEY"}
	AbuseCHKey      = Key{Flag: "abusech-auth-key", Env: "TIFEEDS_ABUSECH_AUTH_KEY"}
	PhishTankKey    = Key{Flag: "phishtank-app-key", Env: "TIFEEDS_PHISHTANK_APP_KEY"}
	ETReputationKey = Key{Flag: "et-reputation-code", Env: "TIFEEDS_ET_REPUTATION_CODE"}
)

// Keys lists every key setting once, in the order --help shows them.
var Keys = []Key{OTXKey, AbuseCHKey, PhishTankKey, ETReputationKey}

// Spec is one built-in kind as it is delivered.
type Spec struct {
	Kind    Kind
	Name    string // the feed's name
	Icon    string // the dashboard's icon name
	Service string // the real service read
	// Description is the feed's read-only description: the service it reads
	// and what it needs.
	Description string
	// Key is the kind's key setting; the zero Key when it has none.
	Key Key
	// KeyRequired: without the key the feed fails with Invalid Credentials.
	// An optional key selects a fuller list when set.
	KeyRequired bool
	// Terms is the service's terms of use in one line.
	Terms string
}

// HasKey reports whether the kind reads a key setting.
func (s Spec) HasKey() bool { return s.Key.Flag != "" }

// Needs says in one line what the feed needs to run.
func (s Spec) Needs() string {
	switch {
	case !s.HasKey():
		return "Nothing: the service is public."
	case s.KeyRequired:
		return "A key: set " + s.Key.Setting() + "."
	default:
		return "Nothing; a key set with " + s.Key.Setting() + " is used when set."
	}
}

// DefaultRetention is how many days a built-in feed keeps an indicator
// after it was last seen (the spec does not fix it; snapshot lists expire
// dropped values at once anyway).
const DefaultRetention = 90

// DefaultBackfill is how many days of past data the first run of an
// incremental built-in feed fetches.
const DefaultBackfill = 7

var specs = []Spec{
	{Kind: OpenThreatExchange, Name: "Open Threat Exchange", Icon: "exchange", Service: "AlienVault OTX subscribed pulses",
		Key: OTXKey, KeyRequired: true,
		Terms: "free community service; each user needs an OTX account and its key; community content of varying quality"},
	{Kind: Government, Name: "Government Feed", Icon: "landmark", Service: "CIRCL OSINT feed (MISP format)",
		Terms: "public OSINT from CIRCL, marked TLP:WHITE; no account"},
	{Kind: IPDomainReputation, Name: "IP and Domain Reputation", Icon: "gauge", Service: "Proofpoint ET reputation (ET compromised IPs without a code)",
		Key:   ETReputationKey,
		Terms: "ET Intelligence reputation is a commercial Proofpoint subscription; the keyless compromised-IPs list is free"},
	{Kind: IDSRules, Name: "IDS Rules", Icon: "shield", Service: "Proofpoint ET Open ruleset for Suricata",
		Terms: "ET Open is free and redistributable (BSD/MIT); ET Pro is commercial"},
	{Kind: PhishingURLDatabase, Name: "Phishing URL Database", Icon: "database", Service: "PhishTank online-valid list",
		Key:   PhishTankKey,
		Terms: "free, attribution expected; commercial redistribution terms not verified"},
	{Kind: MalwareURLSSL, Name: "Malware URL and SSL Certificates", Icon: "certificate", Service: "abuse.ch URLhaus and SSLBL",
		Key:   AbuseCHKey,
		Terms: "abuse.ch datasets under CC0; fair use"},
	{Kind: PhishingURLFeed, Name: "Phishing URL Feed", Icon: "fish", Service: "OpenPhish community feed",
		Terms: "non-commercial and internal business use only; no redistribution without permission"},
	{Kind: EmergingThreat, Name: "Emerging Threats", Icon: "radar", Service: "abuse.ch ThreatFox",
		Key:   AbuseCHKey,
		Terms: "abuse.ch community service, free; fair use"},
}

func init() {
	for i := range specs {
		s := &specs[i]
		s.Description = "Reads the " + s.Service + ". Needs: " + s.Needs()
	}
}

// Specs returns the eight kinds in the order the dashboard lists them.
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
