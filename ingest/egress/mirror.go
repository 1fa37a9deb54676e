package egress

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// MirrorSetting is how an operator sets the feed mirror; errors name it.
const MirrorSetting = "--feed-mirror (TIFEEDS_FEED_MIRROR)"

// ParseMirror checks a feed mirror's base URL: http or https, a host, no
// user information, query or fragment. A path is a prefix, and the only
// part of the mirror's host that the vendor client trusts.
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
	if why := AmbiguousPath(u); why != "" {
		return nil, fmt.Errorf("egress: %s: the mirror's path %s", MirrorSetting, why)
	}
	return u, nil
}

// AmbiguousPath says why servers could read u's path as another one than
// its text says, or "" when they cannot: a dot segment, encoded or not
// ("..", "%2e%2e", "..;" for Tomcat), an encoded slash or a backslash
// (IIS). Such paths are refused rather than resolved, since how a server
// resolves them varies.
func AmbiguousPath(u *url.URL) string {
	esc := strings.ToLower(u.EscapedPath())
	if strings.Contains(esc, "%2f") || strings.Contains(esc, "%5c") || strings.Contains(u.Path, `\`) {
		return "has an encoded slash or a backslash"
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		seg, _, _ = strings.Cut(seg, ";")
		if seg == "." || seg == ".." {
			return "has a dot segment"
		}
	}
	return ""
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
	c.Transport = &mirrorTransport{
		base:     base,
		prefix:   strings.TrimSuffix(base.Path, "/") + "/",
		hostPort: strings.ToLower(hostPort(base)),
		next:     c.Transport,
	}
	return c, nil
}

// mirrorTransport rewrites vendor URLs to the mirror, and lets through to
// the mirror's host (which the dialer trusts) only paths under the
// mirror's prefix.
type mirrorTransport struct {
	base     *url.URL
	prefix   string // the base's path, ending in "/"
	hostPort string // the base's host:port, lower-case
	next     http.RoundTripper
}

func (m *mirrorTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == "" {
		closeBody(r)
		return nil, errors.New("egress: a vendor request without a host")
	}
	// The dialer trusts the mirror by host and port, whatever the scheme,
	// so any URL that dials them is a request to the mirror.
	if strings.ToLower(hostPort(r.URL)) != m.hostPort {
		// RoundTrip must not change the caller's request.
		r = r.Clone(r.Context())
		u := *m.base
		u.Path = m.prefix + r.URL.Host + r.URL.Path
		u.RawPath = ""
		if r.URL.RawPath != "" {
			u.RawPath = strings.TrimSuffix(m.base.EscapedPath(), "/") + "/" + r.URL.Host + r.URL.EscapedPath()
		}
		u.RawQuery = r.URL.RawQuery
		r.URL, r.Host = &u, ""
	}
	if err := m.checkPath(r.URL); err != nil {
		closeBody(r)
		return nil, err
	}
	return m.next.RoundTrip(r)
}

// checkPath refuses a request to the mirror outside its prefix: a link or
// redirect elsewhere on the mirror's host, or a path a server would
// resolve there. The path is not quoted: it may hold a vendor's key.
func (m *mirrorTransport) checkPath(u *url.URL) error {
	if why := AmbiguousPath(u); why != "" {
		return &RefusedError{Reason: "a feed mirror request whose path " + why + " is refused"}
	}
	if !strings.HasPrefix(path.Clean("/"+u.Path)+"/", m.prefix) {
		return &RefusedError{Reason: fmt.Sprintf("the feed mirror is trusted only under its path %s; a request elsewhere on its host is refused", m.prefix)}
	}
	return nil
}

// closeBody closes the body of a request that is not sent, as
// RoundTrip must.
func closeBody(r *http.Request) {
	if r.Body != nil {
		r.Body.Close()
	}
}
