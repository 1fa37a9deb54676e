package egress

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// MirrorSetting is how an operator sets the feed mirror; errors name it.
const MirrorSetting = "--feed-mirror (TIFEEDS_FEED_MIRROR)"

// ParseMirror checks a feed mirror's base URL: http or https, a host, no
// user information, query or fragment. A path is a prefix.
func ParseMirror(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// Not quoted: the error of url.Parse holds the whole URL.
		return nil, fmt.Errorf("egress: %s is not a URL", MirrorSetting)
	}
	if err := CheckURL(u); err != nil {
		return nil, fmt.Errorf("%s: %w", MirrorSetting, err)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("egress: %s: the mirror's URL takes no query or fragment", MirrorSetting)
	}
	return u, nil
}

// hostPort is u's host with its port, the default of its scheme when it
// names none, as the transport dials it.
func hostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// NewVendorClient returns the client of the requests that built-in feeds
// and premium vendor clients make to the vendors' fixed hosts. With mirror
// empty it is NewClient(o). With a mirror, every request to another host
// than the mirror's goes to <mirror>/<host><path>?<query> instead, same
// method, headers and body; since this happens in the transport, links the
// vendor returns (next pages, redirects) are rewritten too. The mirror's
// own address is trusted by the policy (Options.Trusted). URLs that users
// type must not go through this client: they are never rewritten.
func NewVendorClient(o Options, mirror string) (*http.Client, error) {
	if mirror == "" {
		return NewClient(o), nil
	}
	base, err := ParseMirror(mirror)
	if err != nil {
		return nil, err
	}
	o.Trusted = append(append([]string(nil), o.Trusted...), hostPort(base))
	c := NewClient(o)
	c.Transport = &mirrorTransport{base: base, next: c.Transport}
	return c, nil
}

// mirrorTransport rewrites vendor URLs to the mirror.
type mirrorTransport struct {
	base *url.URL
	next http.RoundTripper
}

func (m *mirrorTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.EqualFold(r.URL.Host, m.base.Host) {
		return m.next.RoundTrip(r)
	}
	if r.URL.Host == "" {
		return nil, errors.New("egress: a vendor request without a host")
	}
	// RoundTrip must not change the caller's request.
	r = r.Clone(r.Context())
	u := *m.base
	u.Path = strings.TrimSuffix(m.base.Path, "/") + "/" + r.URL.Host + r.URL.Path
	u.RawPath = ""
	if r.URL.RawPath != "" {
		u.RawPath = strings.TrimSuffix(m.base.EscapedPath(), "/") + "/" + r.URL.Host + r.URL.EscapedPath()
	}
	u.RawQuery = r.URL.RawQuery
	r.URL, r.Host = &u, ""
	return m.next.RoundTrip(r)
}
