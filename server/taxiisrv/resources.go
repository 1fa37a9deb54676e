package taxiisrv

import (
	"github.com/google/uuid"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/stix"
)

// discovery is TAXII 2.1 section 4.1.1.
type discovery struct {
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	Default     string   `json:"default,omitempty"`
	APIRoots    []string `json:"api_roots"`
}

// apiRoot is section 4.2.1.
type apiRoot struct {
	Title            string   `json:"title"`
	Description      string   `json:"description,omitempty"`
	Versions         []string `json:"versions"`
	MaxContentLength int64    `json:"max_content_length"`
}

// collection is section 5.2.1.
type collection struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Description string   `json:"description,omitempty"`
	CanRead     bool     `json:"can_read"`
	CanWrite    bool     `json:"can_write"`
	MediaTypes  []string `json:"media_types"`
}

type collections struct {
	Collections []collection `json:"collections"`
}

// envelope is section 3.7.
type envelope struct {
	More    bool   `json:"more"`
	Next    string `json:"next,omitempty"`
	Objects []any  `json:"objects,omitempty"`
}

// manifestRecord is section 5.4.1.
type manifestRecord struct {
	ID        string `json:"id"`
	DateAdded string `json:"date_added"`
	Version   string `json:"version"`
	MediaType string `json:"media_type"`
}

type manifest struct {
	More    bool             `json:"more"`
	Next    string           `json:"next,omitempty"`
	Objects []manifestRecord `json:"objects,omitempty"`
}

// versions is section 5.7.1.
type versions struct {
	More     bool     `json:"more"`
	Versions []string `json:"versions,omitempty"`
}

// collectionDef is one collection: every indicator, or those of one IoC
// kind. Collections are per IoC kind, not per feed kind: an IoC is one
// object whatever feeds report it, and kinds are what consumers route
// (a firewall takes IPs, a proxy URLs, an EDR hashes).
type collectionDef struct {
	name  string
	title string
	kinds []ioc.Kind // nil: every kind
}

var collectionDefs = func() []collectionDef {
	defs := []collectionDef{{name: "indicators", title: "All indicators"}}
	titles := map[ioc.Kind]string{ioc.URL: "URL", ioc.IP: "IP address", ioc.Domain: "Domain", ioc.MD5: "MD5",
		ioc.SHA1: "SHA-1", ioc.SHA256: "SHA-256", ioc.CertSHA1: "Certificate SHA-1", ioc.Rule: "Suricata rule"}
	for _, k := range ioc.Kinds {
		defs = append(defs, collectionDef{name: string(k), title: titles[k] + " indicators", kinds: []ioc.Kind{k}})
	}
	return defs
}()

// collectionID is the id of a collection of the installation orgID: a
// UUIDv5, stable across restarts, distinct per installation.
func collectionID(orgID, name string) string {
	return uuid.NewSHA1(stix.Namespace, []byte("collection:"+orgID+":"+name)).String()
}

func (d collectionDef) resource(orgID string) collection {
	return collection{ID: collectionID(orgID, d.name), Title: "tifeeds: " + d.title,
		Description: "Live indicators of tifeeds' feeds, deduplicated and allowlisted, one STIX indicator per IoC.",
		CanRead:     true, MediaTypes: []string{STIXMediaType}}
}
