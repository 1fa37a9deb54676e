// Package egress is the one HTTP client every feed fetch goes through, and
// the policy it enforces: feeds fetch URLs that users type, so by default
// they may not reach loopback, private, link-local, unspecified or
// multicast addresses (an SSRF port scanner and a reader of internal pages
// and cloud metadata otherwise).
//
// The address is checked where it cannot be dodged: in net.Dialer.Control,
// on the address actually dialled, after resolution (so DNS rebinding does
// not pass) and for every connection a redirect opens. Numeric hosts in the
// legacy IPv4 spellings (127.1, 2130706433, 0177.0.0.1, 0x7f.0.0.1) are read
// as the address they name before dialling, so that the outcome does not
// depend on the system resolver. Proxies from the environment are ignored:
// through a proxy the dialled address would be the proxy's, and the policy
// would not see the destination.
//
// The package uses the standard library only.
package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Setting is how an operator allows private destinations; refusals name it.
const Setting = "--feed-allow-private (TIFEEDS_FEED_ALLOW_PRIVATE=true)"

// Defaults of Options' zero fields.
const (
	DefaultConnectTimeout      = 30 * time.Second
	DefaultTLSHandshakeTimeout = 30 * time.Second
	DefaultTimeout             = 5 * time.Minute
	MaxRedirects               = 10
)

// Options configure a client.
type Options struct {
	// AllowPrivate lets feeds reach every address (for internal TAXII
	// servers and tests).
	AllowPrivate bool
	// Deny says why an address is refused, or "" to allow it; nil means
	// Forbidden. Ignored when AllowPrivate is set. Tests inject one to allow
	// some loopback addresses and refuse others.
	Deny func(netip.Addr) string
	// ConnectTimeout bounds making one connection (DefaultConnectTimeout
	// when 0).
	ConnectTimeout time.Duration
	// Timeout bounds a whole request, body included (DefaultTimeout when
	// 0); sources set shorter bounds with their contexts.
	Timeout time.Duration
	// TLSClientConfig is the TLS configuration (tests trust their servers'
	// certificates with it); nil for the system's.
	TLSClientConfig *tls.Config
	// Trusted are destinations, as host:port, dialled without the address
	// check: the feed mirror, which the operator sets and which is often
	// on a private network or loopback. Only the host and port named
	// match; a redirect elsewhere is checked as usual.
	Trusted []string
}

// Forbidden says why the default policy refuses a, or "" when it allows
// it. It follows the IANA special-purpose address registries (IPv4 and
// IPv6): what is not globally reachable is refused, and so are IPv6
// addresses outside the global unicast space 2000::/3. An IPv6 address
// that embeds an IPv4 one (IPv4-mapped, IPv4-compatible, IPv4-translated,
// NAT64 64:ff9b::/96, 6to4) reaches that IPv4 address through a gateway, a
// relay or the host's own stack, so it is judged as the address it embeds;
// IPv4-mapped ones with the very reason of their IPv4 address.
func Forbidden(a netip.Addr) string {
	// A zone names the interface, not another destination; a zoned address
	// is in no netip.Prefix, so it would otherwise pass every range.
	a = a.WithZone("").Unmap()
	switch {
	case !a.IsValid():
		return "an invalid address"
	case a.Is4():
		return forbidden4(a)
	case a.IsLoopback():
		return "a loopback address"
	case a.IsUnspecified():
		return "an unspecified address"
	}
	if v4, name, ok := embeddedIPv4(a); ok {
		if why := forbidden4(v4); why != "" {
			return fmt.Sprintf("%s of %s, %s", name, v4, why)
		}
		return ""
	}
	switch {
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsMulticast():
		return "a multicast address"
	case a.IsPrivate():
		return "a private address"
	}
	for _, r := range special6 {
		if r.Contains(a) {
			return r.why
		}
	}
	if !globalUnicast6.Contains(a) {
		return "a reserved address"
	}
	return ""
}

func forbidden4(a netip.Addr) string {
	switch {
	case a.IsLoopback():
		return "a loopback address"
	case a.IsUnspecified() || a.As4()[0] == 0:
		return "an unspecified address"
	case a.IsLinkLocalUnicast():
		return "a link-local address"
	case a.IsMulticast():
		return "a multicast address"
	case a.IsPrivate():
		return "a private address"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "a broadcast address"
	}
	for _, r := range special4 {
		if r.Contains(a) {
			return r.why
		}
	}
	return ""
}

// specialRange is a block of a special-purpose registry that is not
// globally reachable, and how a refusal names it.
type specialRange struct {
	netip.Prefix
	why string
}

func special(prefix, why string) specialRange {
	return specialRange{netip.MustParsePrefix(prefix), why}
}

// special4 are the IPv4 blocks refused besides those netip names. The
// anycast addresses of 192.0.0.0/24 that the registry calls globally
// reachable (PCP, TURN) serve no feed, so the block is refused whole; the
// AS112 and AMT blocks are public and allowed.
var special4 = []specialRange{
	// Carrier-grade NAT space; some clouds serve metadata there
	// (100.100.100.200).
	special("100.64.0.0/10", "a private address"),
	special("192.0.0.0/24", "an IETF protocol address"),
	special("192.0.2.0/24", "a documentation address"),
	special("198.51.100.0/24", "a documentation address"),
	special("203.0.113.0/24", "a documentation address"),
	special("198.18.0.0/15", "a benchmarking address"),
	special("192.88.99.0/24", "a 6to4 relay anycast address"),
	special("240.0.0.0/4", "a reserved address"),
}

// special6 are the IPv6 blocks inside 2000::/3 refused (everything outside
// it that is not embedding IPv4 is refused as reserved). 2001::/23 holds
// Teredo, benchmarking, ORCHID and protocol anycast addresses: none serves
// a feed, and Teredo's embedded client address is the NAT's outside one,
// which says nothing of the host behind it, so the block is refused whole.
var special6 = []specialRange{
	special("64:ff9b:1::/48", "a local-use NAT64 address"),
	special("2001::/32", "a Teredo address"),
	special("2001::/23", "an IETF protocol address"),
	special("2001:db8::/32", "a documentation address"),
	special("3fff::/20", "a documentation address"),
	special("fec0::/10", "a site-local address"),
}

var globalUnicast6 = netip.MustParsePrefix("2000::/3")

var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
	compatible = netip.MustParsePrefix("::/96")
	translated = netip.MustParsePrefix("::ffff:0:0:0/96")
)

// embeddedIPv4 returns the IPv4 address an IPv6 address reaches through a
// translator, a relay or the host's stack, and the name of the form.
func embeddedIPv4(a netip.Addr) (netip.Addr, string, bool) {
	b := a.As16()
	last := netip.AddrFrom4([4]byte(b[12:]))
	switch {
	case nat64.Contains(a):
		return last, "a NAT64 address", true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), "a 6to4 address", true
	case compatible.Contains(a):
		return last, "an IPv4-compatible address", true
	case translated.Contains(a):
		return last, "an IPv4-translated address", true
	}
	return netip.Addr{}, "", false
}

// RefusedError is a destination the policy refuses.
type RefusedError struct {
	Addr   netip.Addr // the address refused; invalid when the URL was refused
	Reason string
}

func (e *RefusedError) Error() string {
	if e.Addr.IsValid() {
		return fmt.Sprintf("egress: %s is %s; feeds may not fetch from loopback, private, link-local, unspecified, multicast or reserved addresses unless %s is set",
			e.Addr, e.Reason, Setting)
	}
	return "egress: " + e.Reason
}

// EgressRefused marks the error as a refusal of the policy for packages
// that classify errors without importing this one (ioc).
func (e *RefusedError) EgressRefused() bool { return true }

// NotConnectedError is the failure of a request that made no connection:
// the host did not resolve, the connection was refused or unreachable, or
// it was not made in time.
type NotConnectedError struct{ Err error }

func (e *NotConnectedError) Error() string { return e.Err.Error() }
func (e *NotConnectedError) Unwrap() error { return e.Err }

// NotConnected marks the error for packages that classify errors without
// importing this one (ioc).
func (e *NotConnectedError) NotConnected() bool { return true }

// Timeout reports whether the connection was not made in time; url.Error
// asks it.
func (e *NotConnectedError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.Err, &t) && t.Timeout()
}

// CheckURL refuses what no feed URL may be: other schemes than http and
// https, no host, and user information (credentials belong in the feed's
// fields, where they are sealed and never shown).
func CheckURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return &RefusedError{Reason: "only http and https URLs can be fetched"}
	}
	if u.Host == "" {
		return &RefusedError{Reason: "the URL has no host"}
	}
	if u.User != nil {
		return &RefusedError{Reason: "the URL carries user information; put credentials in the username and password fields"}
	}
	return nil
}

// NewClient returns the client feed fetches use, enforcing the policy of o.
func NewClient(o Options) *http.Client {
	deny := o.Deny
	if deny == nil {
		deny = Forbidden
	}
	if o.AllowPrivate {
		deny = func(netip.Addr) string { return "" }
	}
	connect := o.ConnectTimeout
	if connect <= 0 {
		connect = DefaultConnectTimeout
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	d := &net.Dialer{
		Timeout:   connect,
		KeepAlive: 30 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &RefusedError{Reason: fmt.Sprintf("unable to check the address %q", address)}
			}
			if why := deny(ap.Addr()); why != "" {
				return &RefusedError{Addr: ap.Addr().Unmap(), Reason: why}
			}
			return nil
		},
	}
	trusted := make(map[string]bool, len(o.Trusted))
	for _, hp := range o.Trusted {
		trusted[strings.ToLower(hp)] = true
	}
	plain := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		// No proxy: the policy must see the destination's address.
		Proxy: nil,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if trusted[strings.ToLower(addr)] {
				return plain.DialContext(ctx, network, addr)
			}
			host, port, err := net.SplitHostPort(addr)
			if err == nil {
				if a, ok := LegacyIPv4(host); ok {
					addr = net.JoinHostPort(a.String(), port)
				}
			}
			return d.DialContext(ctx, network, addr)
		},
		TLSClientConfig:       o.TLSClientConfig,
		TLSHandshakeTimeout:   DefaultTLSHandshakeTimeout,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{
		Transport:     &roundTripper{next: t},
		Timeout:       timeout,
		CheckRedirect: checkRedirect,
	}
}

func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= MaxRedirects {
		return redirectLimitError{}
	}
	return CheckURL(req.URL)
}

type redirectLimitError struct{}

func (redirectLimitError) Error() string {
	return fmt.Sprintf("egress: stopped after %d redirects", MaxRedirects)
}

// TooManyRedirects marks the error for packages that classify errors
// without importing this one (ioc).
func (redirectLimitError) TooManyRedirects() bool { return true }

// roundTripper refuses URLs CheckURL refuses (the first request's too, not
// only redirects') and marks the failures of requests that made no
// connection.
type roundTripper struct{ next http.RoundTripper }

func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := CheckURL(req.URL); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	var connected atomic.Bool
	trace := &httptrace.ClientTrace{
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				connected.Store(true)
			}
		},
		GotConn: func(httptrace.GotConnInfo) { connected.Store(true) },
	}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := rt.next.RoundTrip(req)
	if err != nil && !connected.Load() {
		var refused *RefusedError
		if !errors.As(err, &refused) {
			err = &NotConnectedError{Err: err}
		}
	}
	return resp, err
}

// LegacyIPv4 reads host as an IPv4 address in the spellings inet_aton
// accepts (one to four parts, each decimal, octal with a leading 0 or hex
// with 0x): 127.1, 2130706433, 0177.0.0.1, 0x7f.0.0.1. Such a host is not
// a valid DNS name, and whether the resolver reads it as an address varies,
// so it is read here.
func LegacyIPv4(host string) (netip.Addr, bool) {
	if host == "" || strings.ContainsFunc(host, func(r rune) bool {
		return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F' || r == 'x' || r == 'X' || r == '.')
	}) {
		return netip.Addr{}, false
	}
	parts := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
			p, base = p[2:], 16
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		n, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	var v uint64
	last := len(nums) - 1
	for i, n := range nums[:last] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	if nums[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	v |= nums[last]
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}
