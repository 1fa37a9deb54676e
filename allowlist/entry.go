package allowlist

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/tifeeds/tifeeds/ioc"
)

// EntryKind is what a user entry names.
type EntryKind string

// The kinds of user entry. The strings are stored.
const (
	EntryIP     EntryKind = "ip"
	EntryCIDR   EntryKind = "cidr"
	EntryDomain EntryKind = "domain"
	EntryURL    EntryKind = "url"
)

// Entry is one user entry, its value in the normalised form ParseEntry
// returns.
type Entry struct {
	ID      int64
	Kind    EntryKind
	Value   string
	Comment string
}

// ErrInvalidEntry is wrapped by every error of ParseEntry.
var ErrInvalidEntry = errors.New("invalid allowlist entry")

// The widest ranges a user entry may name: a wider one would hide a large
// part of the address space, most likely by a typo.
const (
	MinBits4 = 8
	MinBits6 = 16
)

// ParseEntry reads a user entry: an IP address, a CIDR range, a domain
// (which covers its subdomains) or a URL prefix (an absolute URL; it
// covers the URLs that start with it). It returns the kind and the value
// normalised like indicators are, so that it compares with stored values.
func ParseEntry(raw string) (EntryKind, string, error) {
	v := strings.TrimSpace(raw)
	if v == "" {
		return "", "", fmt.Errorf("%w: the value is empty", ErrInvalidEntry)
	}
	if len(v) > ioc.MaxValueLen {
		return "", "", fmt.Errorf("%w: longer than %d bytes", ErrInvalidEntry, ioc.MaxValueLen)
	}
	if strings.Contains(v, "://") {
		u, err := ioc.Normalize(ioc.URL, v)
		if err != nil {
			return "", "", fmt.Errorf("%w: not a URL prefix: %v", ErrInvalidEntry, err)
		}
		if o, _ := origin(u); o == u {
			// A prefix without a path would also cover longer host names.
			u += "/"
		}
		return EntryURL, u, nil
	}
	if strings.Contains(v, "/") {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return "", "", fmt.Errorf("%w: %q is not a CIDR range (like 192.0.2.0/24)", ErrInvalidEntry, v)
		}
		if p.Addr().Zone() != "" {
			return "", "", fmt.Errorf("%w: %q has an IPv6 zone", ErrInvalidEntry, v)
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		p = p.Masked()
		if p.IsSingleIP() {
			return EntryIP, p.Addr().String(), nil
		}
		if p.Addr().Is4() && p.Bits() < MinBits4 || p.Addr().Is6() && p.Bits() < MinBits6 {
			return "", "", fmt.Errorf("%w: %s is wider than /%d (IPv4) or /%d (IPv6)", ErrInvalidEntry, p, MinBits4, MinBits6)
		}
		return EntryCIDR, p.String(), nil
	}
	if a, err := netip.ParseAddr(v); err == nil {
		if a.Zone() != "" {
			return "", "", fmt.Errorf("%w: %q has an IPv6 zone", ErrInvalidEntry, v)
		}
		return EntryIP, a.Unmap().String(), nil
	}
	d, err := ioc.Normalize(ioc.Domain, v)
	if err != nil {
		return "", "", fmt.Errorf("%w: %q is not an IP address, a CIDR range, a domain or a URL prefix (with its scheme, like https://example.org/path)", ErrInvalidEntry, v)
	}
	return EntryDomain, d, nil
}
