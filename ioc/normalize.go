package ioc

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// MaxValueLen is the longest value, in bytes, that Normalize accepts. The
// store keeps (type, value) in a unique B-tree index, and PostgreSQL refuses
// index entries over about 2.7 kB, so longer values could never be stored.
const MaxValueLen = 2048

// ErrInvalid is wrapped by every error of Normalize and ParseKind.
var ErrInvalid = errors.New("invalid indicator")

// ParseKind reads one of our kind names: url ip domain md5 sha1 sha256 rule.
func ParseKind(s string) (Kind, error) {
	k := Kind(s)
	switch k {
	case URL, IP, Domain, MD5, SHA1, SHA256, CertSHA1, Rule:
		return k, nil
	}
	return "", fmt.Errorf("%w: unknown kind %q (want url, ip, domain, md5, sha1, sha256, cert_sha1 or rule)", ErrInvalid, s)
}

// Normalize returns the canonical form of raw as a value of kind, so that
// equal indicators reported differently by two feeds are stored once:
// hashes in lower-case hex, domains lower-case in punycode without the
// trailing dot, IP addresses in their canonical text form, URLs with a
// lower-case scheme and host, punycode host and no default port. Surrounding
// white space is dropped. The error wraps ErrInvalid and says what is wrong.
func Normalize(kind Kind, raw string) (string, error) {
	v := strings.TrimSpace(raw)
	if v == "" {
		return "", fmt.Errorf("%w: empty %s", ErrInvalid, kind)
	}
	if len(v) > MaxValueLen {
		return "", fmt.Errorf("%w: %s longer than %d bytes", ErrInvalid, kind, MaxValueLen)
	}
	if !utf8.ValidString(v) {
		return "", fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, kind)
	}
	switch kind {
	case MD5:
		return normalizeHash(v, kind, 32)
	case SHA1, CertSHA1:
		return normalizeHash(v, kind, 40)
	case SHA256:
		return normalizeHash(v, kind, 64)
	case IP:
		return normalizeIP(v)
	case Domain:
		return normalizeDomain(v)
	case URL:
		return normalizeURL(v)
	case Rule:
		return v, nil
	}
	return "", fmt.Errorf("%w: unknown kind %q", ErrInvalid, kind)
}

func normalizeHash(v string, kind Kind, hexLen int) (string, error) {
	if len(v) != hexLen {
		return "", fmt.Errorf("%w: %s must be %d hex digits, got %d characters", ErrInvalid, kind, hexLen, len(v))
	}
	for i := 0; i < len(v); i++ {
		if !isHex(v[i]) {
			return "", fmt.Errorf("%w: %s must be hex digits only, found %q", ErrInvalid, kind, v[i])
		}
	}
	return strings.ToLower(v), nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func normalizeIP(v string) (string, error) {
	a, err := netip.ParseAddr(v)
	if err != nil {
		return "", fmt.Errorf("%w: not an IP address: %q", ErrInvalid, v)
	}
	if a.Zone() != "" {
		return "", fmt.Errorf("%w: IP address with a zone: %q", ErrInvalid, v)
	}
	// ::ffff:1.2.3.4 is the IPv4 address seen through an IPv6 socket; store
	// it once, as IPv4.
	return a.Unmap().String(), nil
}

// lookup is the IDNA profile for host names: lower-cases, maps Unicode to
// punycode, and accepts only letters, digits and hyphens (STD3 rules).
var lookup = idna.Lookup

func normalizeDomain(v string) (string, error) {
	d, err := canonicalHost(strings.TrimSuffix(v, "."))
	if err != nil {
		return "", err
	}
	if err := checkFQDN(d); err != nil {
		return "", err
	}
	return d, nil
}

// canonicalHost returns host in lower-case ASCII (punycode).
func canonicalHost(host string) (string, error) {
	if host == "" {
		return "", fmt.Errorf("%w: empty host name", ErrInvalid)
	}
	h, err := lookup.ToASCII(host)
	if err != nil {
		return "", fmt.Errorf("%w: not a valid host name: %q", ErrInvalid, host)
	}
	// Some inputs map to punycode that the same profile then refuses; such a
	// name could never be looked up again, so it is not a host name.
	if again, err := lookup.ToASCII(h); err != nil || again != h {
		return "", fmt.Errorf("%w: not a valid host name: %q", ErrInvalid, host)
	}
	return h, nil
}

// checkFQDN accepts a lower-case ASCII host name of at least two labels,
// each of 1-63 letters, digits or inner hyphens, whose top-level label is not
// numeric (so that an IPv4 address is not taken for a domain).
func checkFQDN(d string) error {
	if len(d) > 253 {
		return fmt.Errorf("%w: domain longer than 253 characters", ErrInvalid)
	}
	labels := strings.Split(d, ".")
	if len(labels) < 2 {
		return fmt.Errorf("%w: %q is not a fully qualified domain name", ErrInvalid, d)
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("%w: %q has an empty or over-long label", ErrInvalid, d)
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return fmt.Errorf("%w: %q has a label starting or ending with a hyphen", ErrInvalid, d)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return fmt.Errorf("%w: %q has the character %q", ErrInvalid, d, c)
			}
		}
	}
	tld := labels[len(labels)-1]
	if strings.Trim(tld, "0123456789") == "" {
		return fmt.Errorf("%w: %q has a numeric top-level label", ErrInvalid, d)
	}
	return nil
}

var defaultPorts = map[string]string{"http": "80", "https": "443", "ftp": "21", "ws": "80", "wss": "443"}

func normalizeURL(v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil {
		return "", fmt.Errorf("%w: not a URL: %q", ErrInvalid, v)
	}
	if u.Scheme == "" || u.Opaque != "" || u.Host == "" {
		return "", fmt.Errorf("%w: not an absolute URL with a host: %q", ErrInvalid, v)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	host, port := u.Hostname(), u.Port()
	if strings.HasSuffix(u.Host, ":") && port == "" {
		return "", fmt.Errorf("%w: URL with an empty port: %q", ErrInvalid, v)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return "", fmt.Errorf("%w: URL host with an IPv6 zone: %q", ErrInvalid, v)
		}
		a = a.Unmap()
		host = a.String()
		if a.Is6() {
			host = "[" + host + "]"
		}
	} else {
		if strings.HasPrefix(u.Host, "[") {
			return "", fmt.Errorf("%w: URL host is not an IP address: %q", ErrInvalid, v)
		}
		h, err := canonicalHost(strings.TrimSuffix(host, "."))
		if err != nil {
			return "", err
		}
		host = h
	}
	if port != "" && defaultPorts[u.Scheme] != port {
		host += ":" + port
	}
	u.Host = host
	if u.Path == "" && u.RawPath == "" && (u.Scheme == "http" || u.Scheme == "https") {
		u.Path = "/"
	}
	return u.String(), nil
}
