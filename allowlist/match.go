// Package allowlist decides whether an indicator names benign
// infrastructure that must never be stored or exported (reserved address
// ranges, public DNS resolvers, the most popular sites, and the entries an
// operator adds), or infrastructure to flag (cloud ranges, VPNs, dynamic
// DNS): warninglists in MISP's format, built in or the operator's, each
// dropping, flagging or off. Every match says which list and entry it came
// from, so a dropped or flagged indicator can be explained. It imports
// only ioc.
package allowlist

import "github.com/tifeeds/tifeeds/ioc"

// The names of the built-in lists, as they appear in reasons.
const (
	ListReserved  = "reserved"
	ListPublicDNS = "public-dns"
	// ListUser names the entries added through the API.
	ListUser = "user"
)

// Match is the entry that covers an indicator.
type Match struct {
	List  string // a warninglist's name, or ListUser
	Entry string // the entry as listed: an address, a CIDR, a domain or a URL prefix
	// ID and Comment are set for user entries.
	ID      int64
	Comment string
}

// Reason is the rejection reason a run records for an indicator dropped by
// m, e.g. "allowlisted: public-dns 8.8.8.8".
func (m Match) Reason() string { return "allowlisted: " + m.List + " " + m.Entry }

// Matcher answers whether a normalised indicator value is allowlisted.
type Matcher interface {
	Match(kind ioc.Kind, value string) (Match, bool)
}
