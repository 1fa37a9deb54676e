package server

import (
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/sso"
)

// The SAML routes of a tenant (package sso is the service provider):
//
//	GET  /saml/{cust_id}/metadata  the SP metadata; its URL is the SP entity ID
//	GET  /saml/{cust_id}/login     sends the browser to the IdP (HTTP-Redirect)
//	POST /saml/{cust_id}/acs       the IdP's answer (HTTP-POST)
func (s *Server) registerSAML(mux *http.ServeMux) {
	mux.HandleFunc("GET /saml/{cust_id}/metadata", s.samlMetadata)
	mux.HandleFunc("GET /saml/{cust_id}/login", s.samlLogin)
	mux.HandleFunc("POST /saml/{cust_id}/acs", s.samlACS)
}

// samlACSPath reports whether path is a tenant's assertion consumer
// service: the one route the IdP's page posts to across sites, which the
// CSRF rule lets through (the signed, single-use assertion is its proof).
func samlACSPath(path string) bool {
	rest, ok := strings.CutPrefix(path, "/saml/")
	if !ok {
		return false
	}
	id, tail, ok := strings.Cut(rest, "/")
	return ok && id != "" && tail == "acs"
}

func (s *Server) samlMetadata(w http.ResponseWriter, r *http.Request) {
	b, err := s.sso.Metadata(r.Context(), r.PathValue("cust_id"))
	if err != nil {
		s.samlRefused(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/samlmetadata+xml")
	_, _ = w.Write(b)
}

func (s *Server) samlLogin(w http.ResponseWriter, r *http.Request) {
	to, err := s.sso.LoginURL(r.Context(), r.PathValue("cust_id"))
	if err != nil {
		s.samlRefused(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, to, http.StatusFound)
}

// samlBodyTimeout bounds reading the IdP's post: a few KiB in one go.
const samlBodyTimeout = 10 * time.Second

// samlACS takes the IdP's answer. After a good assertion it starts the same
// session as a password sign-in and answers with a page that moves on to
// the dashboard: the cookie is SameSite=Strict, and a browser does not send
// it on a redirect that follows a cross-site POST, but it does on a
// navigation this same-site page starts.
func (s *Server) samlACS(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	if err := rc.SetReadDeadline(time.Now().Add(min(samlBodyTimeout, max(s.cfg.ReadTimeout, time.Second)))); err != nil &&
		!errors.Is(err, http.ErrNotSupported) {
		writeErr(w, r, err)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, sso.MaxResponseBytes+4<<10)
	if err := r.ParseForm(); err != nil {
		s.samlRefused(w, r, &sso.Refusal{Reason: sso.Malformed, Detail: "unreadable form: " + err.Error()})
		return
	}
	custID := r.PathValue("cust_id")
	// Refusals count against the client's address like failed password
	// logins: a client posting garbage is locked out before it fills the
	// audit log.
	attempt, wait := s.logins.reserve("saml:"+custID, clientAddr(r, s.cfg.TrustedProxies), time.Now())
	if wait > 0 {
		retryAfterHeader(w, wait)
		writeSAMLPage(w, http.StatusTooManyRequests, samlPage{Title: "Single sign-on refused",
			Message: "Too many refused sign-ins from your address. Try again later.", Link: s.dashboardPath()})
		return
	}
	in, err := s.sso.Consume(r.Context(), custID, r.PostForm.Get("SAMLResponse"))
	var ref *sso.Refusal
	if err != nil && !errors.As(err, &ref) {
		attempt.cancel()
	}
	if err != nil {
		s.samlRefused(w, r, err)
		return
	}
	attempt.succeeded()
	u := in.User
	token, err := s.accounts.CreateSession(r.Context(), u.ID, s.cfg.SessionTTL)
	if err != nil {
		s.log.ErrorContext(r.Context(), "Unable to start an SSO session", "tenant", custID, "error", err)
		writeSAMLPage(w, http.StatusServiceUnavailable, samlPage{Title: "Sign-in failed",
			Message: "The service could not start your session. Try again in a moment.", Link: s.dashboardPath()})
		return
	}
	fields := map[string]any{"method": "saml", "tenant": custID}
	if in.Created {
		fields["created"] = true
		// A user created just in time is a change like any other.
		s.resolver.Audit.RecordAs(r.Context(), &u.ID, u.Username, audit.UserCreate, audit.UserTarget(u.ID, u.Username),
			map[string]any{"username": u.Username, "scope": string(u.Scope), "tenantId": custID, "method": "saml"})
	}
	s.resolver.Audit.RecordAs(r.Context(), &u.ID, u.Username, audit.SignIn, audit.UserTarget(u.ID, u.Username), fields)
	s.setSessionCookie(w, token)
	writeSAMLPage(w, http.StatusOK, samlPage{Title: "Signed in", Message: "You are signed in.",
		Link: s.dashboardPath(), Refresh: true})
}

// dashboardPath is where the dashboard is: the path of --public-url.
func (s *Server) dashboardPath() string {
	if u, err := url.Parse(s.cfg.PublicURL); err == nil && u.Path != "" {
		return strings.TrimRight(u.Path, "/") + "/"
	}
	return "/"
}

// samlMessages are what a person is told of each refusal.
var samlMessages = map[sso.Reason]string{
	sso.NotConfigured: "This organisation is not set up for single sign-on. Check the organisation you typed, or sign in with your username and password.",
	sso.Malformed:     "The sign-in answer from your identity provider could not be read.",
	sso.BadSignature:  "The sign-in answer is not signed by your organisation's identity provider (bad or missing signature).",
	sso.NotForUs:      "The sign-in answer was not meant for this service (issuer, audience or destination differ). Ask your administrator to check the identity provider's settings.",
	sso.Expired:       "The sign-in answer has expired, or is not valid yet. Sign in again; if it keeps happening, the clocks of the identity provider and this service differ.",
	sso.Replayed:      "This sign-in answer was already used, or the sign-in it answers has expired. Sign in again.",
	sso.Unsolicited:   "This service did not start this sign-in, and your organisation only accepts sign-ins started here. Sign in again from this service.",
	sso.Failed:        "Your identity provider says the sign-in failed.",
	sso.NameTaken:     "Your user name belongs to another account of this service, which cannot sign in through your organisation.",
	sso.BadName:       "The user name your identity provider sent cannot be used here.",
	sso.UserDisabled:  "Your account is disabled.",
	sso.Busy:          "Too many sign-ins are in progress for this organisation. Try again in a few minutes.",
}

// samlRefused answers a refused SSO step with a page, logs the reason and
// records it in the audit log; the assertion itself is never logged.
func (s *Server) samlRefused(w http.ResponseWriter, r *http.Request, err error) {
	custID := r.PathValue("cust_id")
	var ref *sso.Refusal
	if !errors.As(err, &ref) {
		s.log.ErrorContext(r.Context(), "SSO step failed", "tenant", custID, "path", r.URL.Path, "error", err)
		writeSAMLPage(w, http.StatusServiceUnavailable, samlPage{Title: "Sign-in failed",
			Message: "The service could not complete the sign-in. Try again in a moment.", Link: s.dashboardPath()})
		return
	}
	status := http.StatusForbidden
	switch ref.Reason {
	case sso.NotConfigured:
		status = http.StatusNotFound
	case sso.Busy:
		status = http.StatusServiceUnavailable
	case sso.Malformed:
		status = http.StatusBadRequest
	}
	s.log.WarnContext(r.Context(), "SSO sign-in refused", "tenant", custID, "path", r.URL.Path,
		"reason", string(ref.Reason), "detail", ref.Detail)
	if r.Method == http.MethodPost {
		// The actor is the verified NameID when the refusal came after the
		// signature was checked, else nobody known.
		actor := ref.Name
		if actor == "" {
			actor = "anonymous"
		}
		s.resolver.Audit.RecordAs(r.Context(), nil, actor, audit.SSORefused, audit.TenantTarget(quoteID(custID), ""),
			map[string]any{"method": "saml", "reason": string(ref.Reason), "detail": ref.Detail})
	}
	writeSAMLPage(w, status, samlPage{Title: "Single sign-on refused", Message: samlMessages[ref.Reason],
		Reason: string(ref.Reason), Link: s.dashboardPath()})
}

// quoteID cuts a cust_id from a URL for the audit log.
func quoteID(id string) string {
	if len(id) > 64 {
		return id[:64]
	}
	return id
}

type samlPage struct {
	Title, Message, Reason, Link string
	// Refresh moves on to Link at once (a meta refresh: the CSP allows
	// no inline script, and needs none).
	Refresh bool
}

var samlTemplate = template.Must(template.New("saml").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
{{if .Refresh}}<meta http-equiv="refresh" content="0;url={{.Link}}">{{end}}
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · tifeeds</title></head>
<body>
<main>
<h1>{{.Title}}</h1>
<p id="message">{{.Message}}</p>
{{if .Reason}}<p>Reason: <code id="reason">{{.Reason}}</code></p>{{end}}
<p><a id="continue" href="{{.Link}}">{{if .Refresh}}Continue to the dashboard{{else}}Back to sign-in{{end}}</a></p>
</main>
</body></html>
`))

func writeSAMLPage(w http.ResponseWriter, status int, p samlPage) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = samlTemplate.Execute(w, p)
}
