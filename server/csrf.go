package server

import (
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// contentSecurityPolicy is sent with every answer. The dashboard is one
// script and one stylesheet from /assets (Vite emits no inline script) and
// talks only to its own origin (fetch and the websocket: CSP 3 lets 'self'
// match ws: and wss: on the same host). The favicon is a data: URI.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// securityHeaders sets the browser hardening headers on every answer, the
// API's included: a JSON error must not be sniffed into HTML or framed either.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// originPolicy decides whether a browser request comes from the server's own
// origin: the request's Host (what the browser connected to, or what a
// reverse proxy that keeps Host passes on), or one of the configured
// --allowed-origins for a proxy that rewrites Host. Schemes are not
// compared: behind a TLS-terminating proxy the browser's https origin
// reaches us over http.
type originPolicy struct {
	allowed map[string]bool // lower-case host[:port] of each allowed origin
}

func newOriginPolicy(origins []string) originPolicy {
	p := originPolicy{allowed: map[string]bool{}}
	for _, o := range origins {
		if u, err := url.Parse(strings.TrimSpace(o)); err == nil && u.Host != "" {
			p.allowed[strings.ToLower(u.Host)] = true
		}
	}
	return p
}

// ownOrigin reports whether origin (an Origin header) is the server's own.
// "null" (sandboxed frames, opaque redirects) is never.
func (p originPolicy) ownOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	host := strings.ToLower(u.Host)
	return host == strings.ToLower(r.Host) || p.allowed[host]
}

// hostPolicy tells the host names the server serves, against DNS
// rebinding: a page of the attacker's, whose name they then point at this
// server, makes the browser send the cookie this server set with the
// attacker's name as Host and Origin, so the origin checks above pass.
// The name is what gives it away. IP addresses and localhost are always
// served (no name to rebind: an attacker's page cannot make the browser
// send them), and so are the hosts of --public-url, --allowed-origins and
// --allowed-hosts; ports are not compared.
type hostPolicy struct {
	names map[string]bool
}

// newHostPolicy serves the hosts of urls (origins, the public URL) and
// hosts.
func newHostPolicy(urls, hosts []string) hostPolicy {
	p := hostPolicy{names: map[string]bool{"localhost": true}}
	for _, o := range urls {
		if u, err := url.Parse(strings.TrimSpace(o)); err == nil && u.Host != "" {
			p.names[hostName(u.Host)] = true
		}
	}
	for _, h := range hosts {
		if h = hostName(strings.TrimSpace(h)); h != "" {
			p.names[h] = true
		}
	}
	return p
}

// hostName is host[:port] without its port, in lower case and without a
// final dot: the form names are compared in.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	return strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
}

// serves reports whether host (a Host header) names this server.
func (p hostPolicy) serves(host string) bool {
	name := hostName(host)
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	return name != "" && p.names[name]
}

// requireServedHost refuses, with 403, a request riding the session cookie
// (no basic auth) whose Host is not one the server serves; a browser
// following a rebound name sends such requests, API clients send basic
// auth. A login under such a name is let through: the cookie it sets is
// refused with its first use.
func (s *Server) requireServedHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _, basic := r.BasicAuth()
		if !basic && hasSessionCookie(r) && !s.hosts.serves(r.Host) {
			writeError(w, http.StatusForbidden, "unknown_host", "host "+quoteHeader(r.Host)+
				" is not served here; the dashboard's address must be an IP address, localhost, the host of --public-url, or one of --allowed-hosts")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// websocketOrigin accepts websocket clients without an Origin (not
// browsers) and browsers on the server's own origin, so another site cannot
// open a socket with the dashboard's cookie.
func (s *Server) websocketOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	return origin == "" || s.origins.ownOrigin(r, origin)
}

// safeMethod is a method that changes nothing here.
func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// forbidCrossSite refuses, with 403, a state-changing request that a browser
// may have sent on another site's behalf:
//   - whatever its credentials, one whose Origin is not ours, or, without an
//     Origin, whose Sec-Fetch-Site is neither same-origin nor none (a
//     browser's cached basic-auth credentials ride along like a cookie);
//   - one riding the session cookie (no basic auth) that has neither header:
//     browsers send at least one of them on every POST (the ones that do
//     not are the old ones a CSRF works on), and a script holding a cookie
//     is refused rather than trusted;
//   - one riding the session cookie, or a login, whose body is not JSON: a
//     form or a text/plain "simple request" needs no CORS preflight,
//     application/json does.
//
// API clients authenticating with basic auth send neither header and keep
// working. Websocket upgrades (GET) are checked by websocketOrigin.
func (s *Server) forbidCrossSite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The IdP's page posts the SAML answer from its own site, as a
		// form: the signed, single-use assertion is the proof, and no
		// cookie of ours rides on it (SameSite=Strict).
		if safeMethod(r.Method) || (r.Method == http.MethodPost && samlACSPath(r.URL.Path)) {
			next.ServeHTTP(w, r)
			return
		}
		origin, site := r.Header.Get("Origin"), r.Header.Get("Sec-Fetch-Site")
		switch {
		case origin != "":
			if !s.origins.ownOrigin(r, origin) {
				writeError(w, http.StatusForbidden, "cross_site", "cross-site request refused: origin "+
					quoteHeader(origin)+" is not this server's (see --allowed-origins)")
				return
			}
		case site != "":
			if site != "same-origin" && site != "none" {
				writeError(w, http.StatusForbidden, "cross_site", "cross-site request refused (Sec-Fetch-Site: "+
					quoteHeader(site)+")")
				return
			}
		}
		_, _, basic := r.BasicAuth()
		cookie := !basic && hasSessionCookie(r)
		if cookie && origin == "" && site == "" {
			writeError(w, http.StatusForbidden, "cross_site",
				"a request with the session cookie must carry Origin or Sec-Fetch-Site; API clients use HTTP basic auth")
			return
		}
		if (cookie || r.URL.Path == "/api/login") && !jsonContent(r) {
			writeError(w, http.StatusForbidden, "cross_site", "this request must send Content-Type: application/json")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func hasSessionCookie(r *http.Request) bool {
	c, err := r.Cookie(sessionCookie)
	return err == nil && c.Value != ""
}

// jsonContent reports whether the request declares a JSON body.
func jsonContent(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// quoteHeader shows a header value in a message, cut short: it comes from
// the client.
func quoteHeader(v string) string {
	if len(v) > 100 {
		v = v[:100] + "…"
	}
	return strconv.Quote(v)
}
