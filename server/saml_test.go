package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/beevik/etree"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/server"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// testIdP is testdata/saml_idp.py: pysaml2's IdP, started once for the
// package's tests (it takes seconds to start) and killed with the test
// binary.
type testIdP struct {
	base    string // http://127.0.0.1:port
	certPEM string // the signing certificate tenants trust
}

var (
	idpOnce sync.Once
	idp     *testIdP
	idpErr  string
)

func startIdP(t *testing.T) *testIdP {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import saml2").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("pysaml2 is not installed (Debian package python3-pysaml2; .ci/run installs it)")
		}
		t.Skip("pysaml2 is not installed (Debian package python3-pysaml2)")
	}
	if _, err := exec.LookPath("xmlsec1"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("xmlsec1 is not installed (Debian package xmlsec1; .ci/run installs it)")
		}
		t.Skip("xmlsec1 is not installed (Debian package xmlsec1)")
	}
	idpOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tifeeds-idp-")
		if err != nil {
			idpErr = err.Error()
			return
		}
		// A short lifetime, so that an answer can be expired while its
		// IssueInstant is still recent (crewjam refuses those older than
		// 90 s whatever the skew).
		cmd := exec.Command(py, "testdata/saml_idp.py", "--dir", dir, "--lifetime", "40")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		cmd.Stderr = io.Discard
		out, err := cmd.StdoutPipe()
		if err != nil {
			idpErr = err.Error()
			return
		}
		if err := cmd.Start(); err != nil {
			idpErr = err.Error()
			return
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		base, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
		if err != nil || !ok {
			idpErr = "the IdP did not start: " + line
			return
		}
		cert, err := os.ReadFile(filepath.Join(dir, "cert.pem"))
		if err != nil {
			idpErr = err.Error()
			return
		}
		idp = &testIdP{base: base, certPEM: string(cert)}
	})
	if idp == nil {
		t.Fatal(idpErr)
	}
	return idp
}

// metadata is the IdP's metadata XML.
func (p *testIdP) metadata(t *testing.T) string {
	t.Helper()
	r, err := http.Get(p.base + "/metadata")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// samlFixture is a server with a --public-url, so that it is an SP.
type samlFixture struct {
	t     *testing.T
	st    *store.Store
	url   string
	idp   *testIdP
	shift atomic.Int64 // how far ahead of the real clock the SP's clock is, ns
	// throttled keeps the default login throttle on the servers serve
	// starts from then on.
	throttled bool
}

func newSAMLFixture(t *testing.T, st *store.Store) *samlFixture {
	t.Helper()
	if _, err := st.EnsureAdmin(context.Background(), "admin", "admin-password", adminKey); err != nil {
		t.Fatal(err)
	}
	f := &samlFixture{t: t, st: st, idp: startIdP(t)}
	f.url = f.serve(st, "")
	return f
}

// serve starts a server on st whose public URL is publicURL (its own
// address when ""), and returns the address it listens on.
func (f *samlFixture) serve(st *store.Store, publicURL string) string {
	f.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.t.Fatal(err)
	}
	addr := "http://" + ln.Addr().String()
	cfg := server.DefaultConfig()
	cfg.PublicURL = publicURL
	if publicURL == "" {
		cfg.PublicURL = addr
	}
	// Refused answers count like failed logins; the tests refuse many.
	if !f.throttled {
		cfg.Login.MaxFailuresPerUserAddr, cfg.Login.MaxFailuresPerAddr = 1000, 1000
	}
	cfg.SSOClock = func() time.Time { return time.Now().Add(time.Duration(f.shift.Load())) }
	log := discardLogger()
	if testing.Verbose() { // the refusals' details
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	s := server.New(cfg, st, &graph.Resolver{Store: st, Events: events.NewBus(), Audit: audit.New(st, discardLogger())}, log)
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	f.t.Cleanup(srv.Close)
	return addr
}

// ssoTenant creates a tenant signing in through the test IdP, configured
// field by field (or from the IdP's metadata with byMetadata).
func (f *samlFixture) ssoTenant(name string, byMetadata bool, change func(*store.SSOConfig)) string {
	f.t.Helper()
	c := store.SSOConfig{}
	if byMetadata {
		c.SSOConfigMethod = ptr(store.SSOConfigMetadata)
		c.IdpMetadata = ptr(f.idp.metadata(f.t))
	} else {
		c.SSOConfigMethod = ptr("manual")
		c.IssuerURL = ptr(f.idp.base + "/metadata")
		c.SSOEntryPoint = ptr(f.idp.base + "/sso")
		c.IdpCertificate = ptr(f.idp.certPEM)
	}
	if change != nil {
		change(&c)
	}
	t, err := f.st.CreateTenant(context.Background(), store.TenantInput{Name: store.Some(name),
		AuthenticationMethod: store.Some(store.AuthSSOSAML), SSOConfig: store.Some(c)}, store.TenantRules{})
	if err != nil {
		f.t.Fatal(err)
	}
	return t.ID
}

func ptr[T any](v T) *T { return &v }

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (f *samlFixture) get(u string) (*http.Response, string) {
	f.t.Helper()
	r, err := noRedirects.Get(u)
	if err != nil {
		f.t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r, string(b)
}

var formAction = regexp.MustCompile(`<form action="([^"]*)"`)
var samlResponseInput = regexp.MustCompile(`name="SAMLResponse" value="([^"]*)"`)

// answer starts a sign-in at the tenant's login URL and has the IdP answer
// it with the given parameters (user, key, audience, destination, sign);
// it returns where the IdP's page posts to and the SAMLResponse, decoded.
func (f *samlFixture) answer(custID string, params url.Values) (acs string, response []byte) {
	f.t.Helper()
	r, body := f.get(f.url + "/saml/" + custID + "/login")
	if r.StatusCode != http.StatusFound {
		f.t.Fatalf("login: %d %s", r.StatusCode, body)
	}
	to, err := url.Parse(r.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(to.String(), f.idp.base+"/sso?") || to.Query().Get("SAMLRequest") == "" {
		f.t.Fatalf("login redirects to %q", r.Header.Get("Location"))
	}
	q := to.Query()
	for k, v := range params {
		q[k] = v
	}
	to.RawQuery = q.Encode()
	return f.idpPage(to.String())
}

func (f *samlFixture) idpPage(u string) (acs string, response []byte) {
	f.t.Helper()
	r, body := f.get(u)
	a, v := formAction.FindStringSubmatch(body), samlResponseInput.FindStringSubmatch(body)
	if r.StatusCode != http.StatusOK || a == nil || v == nil {
		f.t.Fatalf("IdP answers %d %s", r.StatusCode, body)
	}
	xml, err := base64.StdEncoding.DecodeString(html.UnescapeString(v[1]))
	if err != nil {
		f.t.Fatal(err)
	}
	return html.UnescapeString(a[1]), xml
}

// unsolicited has the IdP send an IdP-initiated answer to the tenant.
func (f *samlFixture) unsolicited(custID, user string) (acs string, response []byte) {
	f.t.Helper()
	q := url.Values{"sp": {f.url + "/saml/" + custID + "/metadata"}, "user": {user}}
	return f.idpPage(f.idp.base + "/unsolicited?" + q.Encode())
}

type acsResult struct {
	status int
	body   string
	cookie *http.Cookie
}

// post posts a SAMLResponse to acs as the IdP's page makes a browser do:
// a form, from the IdP's origin, cross-site.
func (f *samlFixture) post(acs string, response []byte) acsResult {
	f.t.Helper()
	form := url.Values{"SAMLResponse": {base64.StdEncoding.EncodeToString(response)}, "RelayState": {""}}
	req, _ := http.NewRequest("POST", acs, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", f.idp.base)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	r, err := noRedirects.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	out := acsResult{status: r.StatusCode, body: string(b)}
	for _, c := range r.Cookies() {
		if c.Name == "tifeeds_session" {
			out.cookie = c
		}
	}
	return out
}

var reasonCode = regexp.MustCompile(`<code id="reason">([^<]*)</code>`)

// refused checks that res is a refusal page for reason, without a cookie.
func (f *samlFixture) refused(res acsResult, reason string) {
	f.t.Helper()
	m := reasonCode.FindStringSubmatch(res.body)
	if res.status == http.StatusOK || res.cookie != nil || m == nil || m[1] != reason {
		f.t.Fatalf("want a refusal for %s, got %d (cookie %v): %s", reason, res.status, res.cookie != nil, res.body)
	}
	if !strings.Contains(res.body, `href="/"`) {
		f.t.Errorf("the refusal page has no link back to sign-in: %s", res.body)
	}
}

// signedIn checks that res started a session as the password sign-in does,
// and returns the user's `me` with that cookie.
func (f *samlFixture) signedIn(res acsResult) map[string]any {
	f.t.Helper()
	if res.status != http.StatusOK || res.cookie == nil {
		f.t.Fatalf("want a sign-in, got %d: %s", res.status, res.body)
	}
	c := res.cookie
	if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/" {
		f.t.Errorf("session cookie %+v, want HttpOnly, SameSite=Strict, Path=/", c)
	}
	if !strings.Contains(res.body, `<meta http-equiv="refresh" content="0;url=/">`) {
		f.t.Errorf("the sign-in page does not move on to the dashboard: %s", res.body)
	}
	return f.me(c.Value)
}

func (f *samlFixture) me(session string) map[string]any {
	f.t.Helper()
	body := `{"query":"{ me { username scope tenantId signInMethod lastSignInAt } }"}`
	req, _ := http.NewRequest("POST", f.url+"/graphql", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", f.url)
	req.AddCookie(&http.Cookie{Name: "tifeeds_session", Value: session})
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer r.Body.Close()
	var out struct {
		Data   struct{ Me map[string]any }
		Errors []any
	}
	if err := json.NewDecoder(r.Body).Decode(&out); err != nil || out.Data.Me == nil {
		f.t.Fatalf("me with the SSO session: %d %v %v", r.StatusCode, err, out.Errors)
	}
	return out.Data.Me
}

func (f *samlFixture) auditRecords(action string) []store.AuditEvent {
	f.t.Helper()
	evs, _, err := f.st.AuditEvents(context.Background(), store.AuditFilter{Action: action}, 200, "")
	if err != nil {
		f.t.Fatal(err)
	}
	return evs
}

func TestSAMLSignIn(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newSAMLFixture(t, st)
		ctx := context.Background()
		for _, byMetadata := range []bool{true, false} {
			tenant := f.ssoTenant("Acme", byMetadata, nil)
			user := "carol"
			if !byMetadata {
				user = "dave"
			}

			// The SP metadata: its URL is the entity ID, the ACS takes POST.
			r, md := f.get(f.url + "/saml/" + tenant + "/metadata")
			if r.StatusCode != 200 || !strings.Contains(md, `entityID="`+f.url+"/saml/"+tenant+`/metadata"`) ||
				!strings.Contains(md, `Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="`+f.url+"/saml/"+tenant+`/acs"`) {
				t.Fatalf("SP metadata: %d %s", r.StatusCode, md)
			}

			// First sign-in: the user is created just in time.
			acs, resp := f.answer(tenant, url.Values{"user": {user}})
			if acs != f.url+"/saml/"+tenant+"/acs" {
				t.Fatalf("the IdP posts to %s", acs)
			}
			me := f.signedIn(f.post(acs, resp))
			if me["username"] != user || me["scope"] != "TENANT" || me["tenantId"] != tenant ||
				me["signInMethod"] != "SSO" || me["lastSignInAt"] == nil {
				t.Errorf("me = %v", me)
			}
			u, err := st.UserByName(ctx, user)
			if err != nil || u.Scope != store.ScopeTenant || *u.TenantID != tenant || !u.Enabled {
				t.Fatalf("JIT user = %+v, %v", u, err)
			}
			if _, err := st.CheckPassword(ctx, user, ""); err == nil {
				t.Error("the JIT user has a usable password")
			}

			// Second sign-in: the same user.
			acs, resp = f.answer(tenant, url.Values{"user": {user}})
			f.signedIn(f.post(acs, resp))
			if again, _ := st.UserByName(ctx, user); again.ID != u.ID {
				t.Errorf("second sign-in made user %d, want %d", again.ID, u.ID)
			}
		}
		var saml int
		for _, e := range f.auditRecords(audit.SignIn) {
			if strings.Contains(e.Fields, `"method":"saml"`) {
				saml++
			}
			if strings.Contains(e.Fields, "<") {
				t.Errorf("an audit record holds the assertion: %s", e.Fields)
			}
		}
		if saml != 4 {
			t.Errorf("%d SSO sign-ins audited, want 4", saml)
		}
		var created int
		for _, e := range f.auditRecords(audit.UserCreate) {
			if strings.Contains(e.Fields, `"method":"saml"`) && (e.TargetName == "carol" || e.TargetName == "dave") {
				created++
			}
		}
		if created != 2 {
			t.Errorf("%d JIT users audited, want 2", created)
		}
	})
}

// stripSignatures removes every ds:Signature, as an attacker who cannot
// sign would.
func stripSignatures(t *testing.T, xml []byte) []byte {
	t.Helper()
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(xml); err != nil {
		t.Fatal(err)
	}
	for _, s := range doc.FindElements("//Signature") {
		s.Parent().RemoveChild(s)
	}
	b, _ := doc.WriteToBytes()
	return b
}

// wrapSignature is XML signature wrapping: the signed assertion moves
// into the signature's ds:Object, where its signature still verifies, and
// a copy naming another user (unsigned) takes its place.
func wrapSignature(t *testing.T, xml []byte, victim string) []byte {
	t.Helper()
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(xml); err != nil {
		t.Fatal(err)
	}
	resp := doc.Root()
	orig := resp.FindElement("./Assertion")
	if orig == nil {
		t.Fatal("no assertion")
	}
	evil := orig.Copy()
	if sig := evil.FindElement("./Signature"); sig != nil {
		evil.RemoveChild(sig)
	}
	evil.FindElement("./Subject/NameID").SetText(victim)
	evil.CreateAttr("ID", "_evil")
	sig := orig.FindElement("./Signature")
	obj := sig.CreateElement("ds:Object")
	resp.RemoveChild(orig)
	obj.AddChild(orig)
	resp.AddChild(evil)
	b, _ := doc.WriteToBytes()
	return b
}

func TestSAMLRefusals(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newSAMLFixture(t, st)
		ctx := context.Background()
		a := f.ssoTenant("A", false, nil)
		b := f.ssoTenant("B", true, nil)
		bEntity, bACS := f.url+"/saml/"+b+"/metadata", f.url+"/saml/"+b+"/acs"
		otherIssuer := f.ssoTenant("Other issuer", false, func(c *store.SSOConfig) { c.IssuerURL = ptr("https://other-idp.example/metadata") })
		skewed := f.ssoTenant("Skewed", false, func(c *store.SSOConfig) { c.AllowClockSkew = ptr(true) })
		idpInitiated := f.ssoTenant("IdP-initiated", false, func(c *store.SSOConfig) { c.IdpCallbackType = ptr(store.IdPCallbackIdPInitiated) })
		if _, err := st.CreateUser(ctx, "bob", "bob-password", store.ScopeTenant, &b); err != nil {
			t.Fatal(err)
		}
		off, err := st.CreateUser(ctx, "off", "off-password", store.ScopeTenant, &a)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.SetUserEnabled(ctx, off.ID, false); err != nil {
			t.Fatal(err)
		}
		user := url.Values{"user": {"alice"}}
		with := func(k, v string) url.Values { return url.Values{"user": {"alice"}, k: {v}} }

		t.Run("signed by another key", func(t *testing.T) {
			f.t = t
			f.refused(f.post(f.answer(a, with("key", "other"))), "bad_signature")
		})
		t.Run("unsigned", func(t *testing.T) {
			f.t = t
			acs, resp := f.answer(a, user)
			f.refused(f.post(acs, stripSignatures(t, resp)), "bad_signature")
		})
		t.Run("signature wrapping", func(t *testing.T) {
			f.t = t
			acs, resp := f.answer(a, url.Values{"user": {"mallory"}})
			res := f.post(acs, wrapSignature(t, resp, "victim"))
			if res.status == http.StatusOK || res.cookie != nil {
				t.Fatalf("a wrapped signature signed in: %s", res.body)
			}
			if _, err := st.UserByName(ctx, "victim"); err == nil {
				t.Error("the wrapped assertion's user was created")
			}
		})
		t.Run("comment in NameID", func(t *testing.T) {
			f.t = t
			// The IdP signs "admin.evil" (the attacker's own account);
			// the comment keeps the signature valid and would leave
			// "admin" to a naive parser.
			acs, resp := f.answer(a, url.Values{"user": {"admin.evil"}})
			resp = bytes.Replace(resp, []byte(">admin.evil<"), []byte(">admin<!---->.evil<"), 1)
			if !bytes.Contains(resp, []byte("<!---->")) {
				t.Fatal("no NameID to alter")
			}
			f.refused(f.post(acs, resp), "malformed")
		})
		t.Run("wrong issuer", func(t *testing.T) {
			f.t = t
			f.refused(f.post(f.answer(otherIssuer, user)), "not_for_service")
		})
		t.Run("wrong audience", func(t *testing.T) {
			f.t = t
			f.refused(f.post(f.answer(a, with("audience", bEntity))), "not_for_service")
		})
		t.Run("wrong destination and recipient", func(t *testing.T) {
			f.t = t
			_, resp := f.answer(a, with("destination", bACS))
			f.refused(f.post(f.url+"/saml/"+a+"/acs", resp), "not_for_service")
		})
		t.Run("another tenant's answer", func(t *testing.T) {
			f.t = t
			// Both tenants trust the same IdP: A's answer posted to B.
			_, resp := f.answer(a, user)
			f.refused(f.post(bACS, resp), "not_for_service")
		})
		t.Run("root name", func(t *testing.T) {
			f.t = t
			f.refused(f.post(f.answer(a, url.Values{"user": {"admin"}})), "name_taken")
		})
		t.Run("another tenant's user", func(t *testing.T) {
			f.t = t
			f.refused(f.post(f.answer(a, url.Values{"user": {"bob"}})), "name_taken")
		})
		t.Run("disabled user", func(t *testing.T) {
			f.t = t
			f.refused(f.post(f.answer(a, url.Values{"user": {"off"}})), "user_disabled")
		})
		t.Run("replayed", func(t *testing.T) {
			f.t = t
			acs, resp := f.answer(a, user)
			f.signedIn(f.post(acs, resp))
			f.refused(f.post(acs, resp), "replayed")
		})
		t.Run("unsolicited, sp_initiated", func(t *testing.T) {
			f.t = t
			f.refused(f.post(f.unsolicited(a, "alice")), "unsolicited")
		})
		t.Run("unsolicited, idp_initiated", func(t *testing.T) {
			f.t = t
			f.signedIn(f.post(f.unsolicited(idpInitiated, "ivy")))
		})
		t.Run("expired", func(t *testing.T) {
			f.t = t
			// The IdP's answers live 40 s: 55 s later they are expired,
			// by 15 s at least, and issued under crewjam's 90 s.
			t.Cleanup(func() { f.shift.Store(0) })
			acs, resp := f.answer(a, user)
			f.shift.Store(int64(55 * time.Second))
			f.refused(f.post(acs, resp), "expired")
			f.shift.Store(0)
			acs, resp = f.answer(skewed, url.Values{"user": {"sam"}})
			f.shift.Store(int64(55 * time.Second))
			f.signedIn(f.post(acs, resp)) // within the 3 minutes allowed
			f.shift.Store(0)
			acs, resp = f.answer(skewed, url.Values{"user": {"sam"}})
			f.shift.Store(int64(5 * time.Minute))
			f.refused(f.post(acs, resp), "expired")
		})
		f.t = t
		if _, err := st.UserByName(ctx, "alice"); err != nil {
			t.Errorf("alice was never signed in: %v", err)
		}
		refusals := f.auditRecords(audit.SSORefused)
		if len(refusals) < 12 {
			t.Errorf("%d SSO refusals audited, want one per refusal", len(refusals))
		}
		for _, e := range refusals {
			if !strings.Contains(e.Fields, `"reason"`) || strings.Contains(e.Fields, "<") {
				t.Errorf("refusal record %s", e.Fields)
			}
		}
	})
}

// TestSAMLNotSetUp: a tenant that does not sign in through SAML, or whose
// configuration is unusable, gets the "not set up" page.
func TestSAMLNotSetUp(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newSAMLFixture(t, st)
		plain, err := st.CreateTenant(context.Background(), store.TenantInput{Name: store.Some("Plain")}, store.TenantRules{})
		if err != nil {
			t.Fatal(err)
		}
		noCert := f.ssoTenant("No cert", false, func(c *store.SSOConfig) { c.IdpCertificate = ptr("") })
		badCert := f.ssoTenant("Bad cert", false, func(c *store.SSOConfig) { c.IdpCertificate = ptr("bm90IGEgY2VydA==") })
		badXML := f.ssoTenant("Bad XML", true, func(c *store.SSOConfig) { c.IdpMetadata = ptr("<EntityDescriptor") })
		for _, id := range []string{plain.ID, noCert, badCert, badXML, "no-such-tenant"} {
			for _, p := range []string{"/login", "/metadata"} {
				r, body := f.get(f.url + "/saml/" + id + p)
				m := reasonCode.FindStringSubmatch(body)
				if r.StatusCode != http.StatusNotFound || m == nil || m[1] != "not_configured" ||
					!strings.Contains(body, "not set up for single sign-on") {
					t.Errorf("%s%s: %d %s", id, p, r.StatusCode, body)
				}
			}
		}
	})
}

// TestSAMLSecondInstance: two servers on one PostgreSQL database behind
// one public URL. A sign-in started on one finishes on the other, and an
// assertion used on one is refused on the other.
func TestSAMLSecondInstance(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	one, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { one.Close() })
	two, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { two.Close() })
	f := newSAMLFixture(t, one)
	second := f.serve(two, f.url)
	tenant := f.ssoTenant("Acme", false, nil)

	acs, resp := f.answer(tenant, url.Values{"user": {"carol"}}) // started on the first
	onSecond := strings.Replace(acs, f.url, second, 1)
	f.signedIn(f.post(onSecond, resp))
	f.refused(f.post(acs, resp), "replayed")
}

// TestPasswordRefusedForSSOUsers: a user of a tenant that signs in through
// SAML cannot sign in with a password, but their API keys work.
func TestPasswordRefusedForSSOUsers(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newSAMLFixture(t, st)
		ctx := context.Background()
		tenant := f.ssoTenant("Acme", false, nil)
		u, err := st.CreateUser(ctx, "erin", "erin-password", store.ScopeTenant, &tenant)
		if err != nil {
			t.Fatal(err)
		}
		_, key, err := st.CreateAPIKey(ctx, u.ID, "k", "")
		if err != nil {
			t.Fatal(err)
		}
		login := func(name, password string) (int, string) {
			req, _ := http.NewRequest("POST", f.url+"/api/login",
				strings.NewReader(`{"username":"`+name+`","password":"`+password+`"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Origin", f.url)
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Body.Close()
			b, _ := io.ReadAll(r.Body)
			if len(r.Cookies()) > 0 {
				t.Errorf("login of %s set a cookie", name)
			}
			return r.StatusCode, string(b)
		}
		if status, body := login("erin", "erin-password"); status != http.StatusForbidden ||
			!strings.Contains(body, `"sso_required"`) || !strings.Contains(body, "Sign in with SSO") {
			t.Errorf("password sign-in of an SSO tenant's user: %d %s", status, body)
		}
		if status, _ := login("erin", "wrong-password"); status != http.StatusUnauthorized {
			t.Errorf("a wrong password tells %d, want 401 like any other", status)
		}
		req, _ := http.NewRequest("POST", f.url+"/graphql", strings.NewReader(`{"query":"{ me { username signInMethod } }"}`))
		req.Header.Set("Content-Type", "application/json")
		req.SetBasicAuth("erin", key)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if r.StatusCode != 200 || !strings.Contains(string(b), `"username":"erin"`) || !strings.Contains(string(b), `"signInMethod":"SSO"`) {
			t.Errorf("API key of an SSO user: %d %s", r.StatusCode, b)
		}
		var refused bool
		for _, e := range f.auditRecords(audit.SignInFailed) {
			refused = refused || (e.Actor == "erin" && strings.Contains(e.Fields, "sso_required"))
		}
		if !refused {
			t.Error("the refused password sign-in is not audited")
		}
	})
}

// TestSAMLACSCrossSite: the CSRF rule lets the IdP's cross-site form post
// through to an ACS, and to nothing else; refused answers are throttled
// like failed logins.
func TestSAMLACSCrossSite(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newSAMLFixture(t, st)
		tenant := f.ssoTenant("Acme", false, nil)
		post := func(base, path string) (int, string) {
			req, _ := http.NewRequest("POST", base+path, strings.NewReader("SAMLResponse=PHg%2BPC94Pg%3D%3D"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", "https://idp.example")
			req.Header.Set("Sec-Fetch-Site", "cross-site")
			r, err := noRedirects.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Body.Close()
			b, _ := io.ReadAll(r.Body)
			return r.StatusCode, string(b)
		}
		if status, body := post(f.url, "/saml/"+tenant+"/acs"); status != http.StatusBadRequest || !strings.Contains(body, `id="reason">malformed<`) {
			t.Errorf("cross-site post to the ACS: %d %s", status, body)
		}
		for _, path := range []string{"/saml/" + tenant + "/acs/x", "/saml/" + tenant + "/login", "/saml/acs", "/api/login", "/graphql"} {
			if status, body := post(f.url, path); status != http.StatusForbidden || !strings.Contains(body, `"cross_site"`) {
				t.Errorf("cross-site post to %s: %d %s", path, status, body)
			}
		}

		f.throttled = true
		throttled := f.serve(st, "")
		for i := range server.DefaultLoginLimits().MaxFailuresPerUserAddr {
			if status, _ := post(throttled, "/saml/"+tenant+"/acs"); status != http.StatusBadRequest {
				t.Fatalf("refusal %d: %d", i+1, status)
			}
		}
		if status, body := post(throttled, "/saml/"+tenant+"/acs"); status != http.StatusTooManyRequests ||
			!strings.Contains(body, "Too many refused sign-ins") {
			t.Errorf("past the limit: %d %s", status, body)
		}
	})
}
