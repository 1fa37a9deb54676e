package stix

import (
	"time"

	"github.com/google/uuid"

	"github.com/tifeeds/tifeeds/ioc"
)

// Identity is the STIX identity that creates every object tifeeds writes.
type Identity struct {
	Type          string `json:"type"`
	SpecVersion   string `json:"spec_version"`
	ID            string `json:"id"`
	Created       string `json:"created"`
	Modified      string `json:"modified"`
	Name          string `json:"name"`
	Description   string `json:"description,omitempty"`
	IdentityClass string `json:"identity_class"`
}

// identityTime is the created and modified time of every installation's
// identity: fixed, so the object is the same on every pull.
var identityTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// NewIdentity is the identity of the tifeeds installation whose organisation
// id is orgID: its id is UUIDv5(Namespace, "identity:"+orgID), stable across
// pulls and restarts, and distinct per installation.
func NewIdentity(orgID string) Identity {
	return Identity{
		Type:          "identity",
		SpecVersion:   SpecVersion,
		ID:            "identity--" + uuid.NewSHA1(Namespace, []byte("identity:"+orgID)).String(),
		Created:       Timestamp(identityTime),
		Modified:      Timestamp(identityTime),
		Name:          "tifeeds",
		Description:   "tifeeds threat-intelligence hub (organisation " + orgID + ")",
		IdentityClass: "system",
	}
}

// Indicator is a STIX 2.1 indicator object as tifeeds writes it.
type Indicator struct {
	Type         string   `json:"type"`
	SpecVersion  string   `json:"spec_version"`
	ID           string   `json:"id"`
	CreatedByRef string   `json:"created_by_ref"`
	Created      string   `json:"created"`
	Modified     string   `json:"modified"`
	Name         string   `json:"name"`
	Pattern      string   `json:"pattern"`
	PatternType  string   `json:"pattern_type"`
	ValidFrom    string   `json:"valid_from"`
	ValidUntil   string   `json:"valid_until,omitempty"`
	Confidence   int      `json:"confidence"`
	Labels       []string `json:"labels,omitempty"`
}

// IoC is what an indicator is made of.
type IoC struct {
	Kind  ioc.Kind
	Value string
	// Text is a rule's signature; empty for other kinds.
	Text      string
	Score     int
	Tags      []string
	FirstSeen time.Time
	ExpiresAt time.Time
	// ChangedAt is when the IoC last changed in the store: the indicator's
	// modified time, which is its version.
	ChangedAt time.Time
}

// NewIndicator is the indicator of i, created by identityID. created and
// valid_from are the IoC's first sighting, modified is its last change
// (never before created, as STIX requires), valid_until its expiry when
// after valid_from, confidence its score and labels its tags.
func NewIndicator(i IoC, identityID string) Indicator {
	pattern, patternType := Pattern(i.Kind, i.Value, i.Text)
	created, modified := i.FirstSeen, i.ChangedAt
	if modified.Before(created) {
		created = modified
	}
	ind := Indicator{
		Type:         "indicator",
		SpecVersion:  SpecVersion,
		ID:           IndicatorID(i.Kind, i.Value),
		CreatedByRef: identityID,
		Created:      Timestamp(created),
		Modified:     Timestamp(modified),
		Name:         name(i),
		Pattern:      pattern,
		PatternType:  patternType,
		ValidFrom:    Timestamp(created),
		Confidence:   min(max(i.Score, 0), 100),
		Labels:       i.Tags,
	}
	if i.ExpiresAt.After(created) {
		ind.ValidUntil = Timestamp(i.ExpiresAt)
	}
	return ind
}

// maxNameLen bounds the name: a rule's value can be long, and the pattern
// has it whole.
const maxNameLen = 200

func name(i IoC) string {
	v := i.Value
	if len(v) > maxNameLen {
		v = v[:maxNameLen]
		for len(v) > 0 && v[len(v)-1]&0xC0 == 0x80 {
			v = v[:len(v)-1] // no half of a UTF-8 sequence
		}
		if len(v) > 0 && v[len(v)-1] >= 0xC0 {
			v = v[:len(v)-1]
		}
		v += "…"
	}
	return string(i.Kind) + ": " + v
}
