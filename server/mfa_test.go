package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image/png"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/server"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// clock is a clock the tests set: codes are checked against it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newClock() *clock { return &clock{t: time.Date(2027, 1, 4, 12, 0, 10, 0, time.UTC)} }

var mfaKey = bytes.Repeat([]byte("m"), 32)

// mfaServer is a server as `tifeeds serve` wires it for MFA: the audit
// log, and auth.MFA over st on clock c.
func mfaServer(t *testing.T, st *store.Store, c *clock, opts ...func(*server.Config)) *httptest.Server {
	t.Helper()
	secrets, err := store.NewSecrets(mfaKey)
	if err != nil {
		t.Fatal(err)
	}
	cfg := server.DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	s := server.New(cfg, st, &graph.Resolver{Store: st, Events: events.NewBus(), Audit: audit.New(st, discardLogger()),
		MFA: &auth.MFA{Store: st, Secrets: secrets, Now: c.Now}}, discardLogger())
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv
}

// withMFA replaces the fixture's server by mfaServer.
func (f *fixture) withMFA(c *clock, opts ...func(*server.Config)) {
	f.t.Helper()
	f.srv.Close()
	f.srv = mfaServer(f.t, f.store, c, opts...)
}

// code is the TOTP code of secret at at, made by the library's generator.
func code(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	c, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type signInAnswer struct {
	status  int
	body    map[string]any
	cookies []*http.Cookie
	raw     string
	header  http.Header
}

func (a signInAnswer) str(k string) string { s, _ := a.body[k].(string); return s }

func (a signInAnswer) errCode() string {
	e, _ := a.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func (a signInAnswer) session() string {
	for _, c := range a.cookies {
		if c.Name == "tifeeds_session" && c.Value != "" {
			return c.Name + "=" + c.Value
		}
	}
	return ""
}

func (f *fixture) signIn(path string, body map[string]any) signInAnswer {
	f.t.Helper()
	return postJSON(f.t, f.srv, path, body)
}

func postJSON(t *testing.T, srv *httptest.Server, path string, body map[string]any) signInAnswer {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", srv.URL+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var raw bytes.Buffer
	_, _ = raw.ReadFrom(res.Body)
	a := signInAnswer{status: res.StatusCode, cookies: res.Cookies(), raw: raw.String(), header: res.Header}
	_ = json.Unmarshal(raw.Bytes(), &a.body)
	return a
}

// password signs in with a password and expects the MFA step: it returns
// the challenge token.
func (f *fixture) password(user, pass, want string) string {
	f.t.Helper()
	a := f.signIn("/api/login", map[string]any{"username": user, "password": pass})
	if a.status != 200 || a.body[want] != true || a.str("mfa_token") == "" || a.session() != "" {
		f.t.Fatalf("password of %s: want %s and no session, got %d %s", user, want, a.status, a.raw)
	}
	return a.str("mfa_token")
}

// requireMFA makes the analyst's tenant require MFA, through the REST API.
func (f *fixture) requireMFA(on bool) {
	f.t.Helper()
	if r := f.rest("PATCH", "/tenants/"+f.tenantID, `{"cust_name":"Analyst's tenant","mfa_enabled":`+map[bool]string{true: "true", false: "false"}[on]+`}`); r.status != 200 {
		f.t.Fatalf("tenant mfa_enabled: %d %s", r.status, r.body)
	}
}

// enrolAtSignIn takes the analyst through enrolment at sign-in: it returns
// the secret, the session and the recovery codes.
func (f *fixture) enrolAtSignIn(c *clock) (secret, session string, codes []string) {
	f.t.Helper()
	token := f.password("analyst", "analyst-password", "mfa_enrolment_required")
	e := f.signIn("/api/login/mfa/enrol", map[string]any{"mfa_token": token})
	secret = e.str("secret")
	if e.status != 200 || secret == "" {
		f.t.Fatalf("enrol: %d %s", e.status, e.raw)
	}
	a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "code": code(f.t, secret, c.Now())})
	if a.status != 200 || a.session() == "" {
		f.t.Fatalf("confirm: %d %s", a.status, a.raw)
	}
	for _, v := range a.body["recovery_codes"].([]any) {
		codes = append(codes, v.(string))
	}
	return secret, a.session(), codes
}

// asSession calls GraphQL with a session cookie, as the dashboard does.
func (f *fixture) asSession(session, query string, vars map[string]any) gqlAnswer {
	f.t.Helper()
	return f.gqlAs("", "", query, vars, map[string]string{"Cookie": session, "Origin": f.srv.URL})
}

type meMFA struct {
	Me struct {
		MfaEnabled, MfaRequired bool
		MfaRecoveryCodesLeft    int
	}
}

func (f *fixture) meMFA(session string) meMFA {
	f.t.Helper()
	a := f.asSession(session, `{ me { mfaEnabled mfaRequired mfaRecoveryCodesLeft } }`, nil)
	var m meMFA
	b, _ := json.Marshal(a.Data)
	if err := json.Unmarshal(b, &m); err != nil || len(a.Errors) != 0 {
		f.t.Fatalf("me: %v %+v", err, a.Errors)
	}
	return m
}

func (f *fixture) auditActions(action string) []store.AuditEvent {
	f.t.Helper()
	events, _, err := f.store.AuditEvents(context.Background(), store.AuditFilter{Action: action}, 100, "")
	if err != nil {
		f.t.Fatal(err)
	}
	return events
}

// TestMFARequiredByTenant: a user of a tenant with mfa_enabled gets no
// session for a password; they enrol at that sign-in (secret, QR code,
// confirm with a code), receive ten recovery codes, and from then on sign
// in with a code of the current step ± 1, each once, or a recovery code,
// each once.
func TestMFARequiredByTenant(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		c := newClock()
		f.withMFA(c)
		// Without the tenant's requirement the analyst signs in with a password.
		if a := f.signIn("/api/login", map[string]any{"username": "analyst", "password": "analyst-password"}); a.status != 200 || a.session() == "" {
			t.Fatalf("without MFA: %d %s", a.status, a.raw)
		}
		f.requireMFA(true)
		token := f.password("analyst", "analyst-password", "mfa_enrolment_required")

		// Before a secret is asked for, no code confirms anything.
		if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "code": "123456"}); a.status != 422 {
			t.Errorf("code before enrolment: %d %s", a.status, a.raw)
		}
		e := f.signIn("/api/login/mfa/enrol", map[string]any{"mfa_token": token})
		secret := e.str("secret")
		if e.status != 200 || secret == "" || !strings.HasPrefix(e.str("otpauth_url"), "otpauth://totp/") ||
			!strings.Contains(e.str("otpauth_url"), "secret="+secret) {
			t.Fatalf("enrol: %d %s", e.status, e.raw)
		}
		// The QR code is a PNG holding the URL's secret.
		qr, ok := strings.CutPrefix(e.str("qr_code"), "data:image/png;base64,")
		raw, err := base64.StdEncoding.DecodeString(qr)
		if !ok || err != nil {
			t.Fatalf("qr_code is not a PNG data URL: %.60s", e.str("qr_code"))
		}
		if _, err := png.Decode(bytes.NewReader(raw)); err != nil {
			t.Fatalf("qr_code is not a PNG: %v", err)
		}
		// The secret is sealed at rest.
		var sealed []byte
		if err := st.DB.QueryRow("SELECT mfa_pending_secret FROM users WHERE username = 'analyst'").Scan(&sealed); err != nil ||
			len(sealed) == 0 || bytes.Contains(sealed, []byte(secret)) {
			t.Fatalf("pending secret at rest: %v %q", err, sealed)
		}

		// Two steps off is refused, one step off accepted.
		for _, off := range []time.Duration{-60 * time.Second, 60 * time.Second} {
			if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "code": code(t, secret, c.Now().Add(off))}); a.status != 401 || a.errCode() != "wrong_code" {
				t.Errorf("code %v off: %d %s", off, a.status, a.raw)
			}
		}
		a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "code": code(t, secret, c.Now().Add(-30*time.Second))})
		if a.status != 200 || a.session() == "" {
			t.Fatalf("confirm: %d %s", a.status, a.raw)
		}
		codes, _ := a.body["recovery_codes"].([]any)
		if len(codes) != 10 {
			t.Fatalf("recovery codes: %s", a.raw)
		}
		if m := f.meMFA(a.session()); !m.Me.MfaEnabled || !m.Me.MfaRequired || m.Me.MfaRecoveryCodesLeft != 10 {
			t.Errorf("me after enrolment: %+v", m)
		}
		if ev := f.lastAudit(); ev.Action != audit.SignIn || !strings.Contains(ev.Fields, "password+totp_enrolment") {
			t.Errorf("last audit record: %+v", ev)
		}
		if err := st.DB.QueryRow("SELECT mfa_secret FROM users WHERE username = 'analyst'").Scan(&sealed); err != nil ||
			len(sealed) == 0 || bytes.Contains(sealed, []byte(secret)) {
			t.Fatalf("secret at rest: %v", err)
		}
		// The challenge made one session: it is spent.
		if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "code": code(t, secret, c.Now())}); a.status != 401 || a.errCode() != "mfa_token_invalid" {
			t.Errorf("challenge used twice: %d %s", a.status, a.raw)
		}

		// Next sign-in: a code, once.
		token = f.password("analyst", "analyst-password", "mfa_required")
		if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "code": code(t, secret, c.Now().Add(-30*time.Second))}); a.status != 401 {
			t.Errorf("the enrolment's code again: %d %s", a.status, a.raw)
		}
		now := code(t, secret, c.Now())
		if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "code": now}); a.status != 200 || a.session() == "" {
			t.Fatalf("current code: %d %s", a.status, a.raw)
		}
		if ev := f.lastAudit(); ev.Action != audit.SignIn || !strings.Contains(ev.Fields, `"password+totp"`) {
			t.Errorf("last audit record: %+v", ev)
		}
		token = f.password("analyst", "analyst-password", "mfa_required")
		if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "code": now}); a.status != 401 || a.errCode() != "wrong_code" {
			t.Errorf("a used code again: %d %s", a.status, a.raw)
		}
		if refused := f.auditActions(audit.MFARefused); len(refused) < 3 || refused[0].Actor != "analyst" || strings.Contains(refused[0].Fields, now) {
			t.Errorf("refusals recorded: %+v", refused)
		}
		// A recovery code works once (case and dashes forgiven).
		rc := codes[3].(string)
		if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "recovery_code": strings.ToUpper(strings.ReplaceAll(rc, "-", ""))}); a.status != 200 || a.session() == "" {
			t.Fatalf("recovery code: %d %s", a.status, a.raw)
		} else if m := f.meMFA(a.session()); m.Me.MfaRecoveryCodesLeft != 9 {
			t.Errorf("recovery codes left: %+v", m)
		}
		token = f.password("analyst", "analyst-password", "mfa_required")
		if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "recovery_code": rc}); a.status != 401 {
			t.Errorf("recovery code twice: %d %s", a.status, a.raw)
		}
		// The next step's code is good.
		c.add(30 * time.Second)
		if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "code": code(t, secret, c.Now())}); a.status != 200 {
			t.Errorf("next step's code: %d %s", a.status, a.raw)
		}
	})
}

// TestMFAChallengeIsNoSession: the token of the password step opens
// nothing but the MFA step; it expires, and dies after too many wrong
// codes.
func TestMFAChallengeIsNoSession(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		c := newClock()
		f.withMFA(c, func(cfg *server.Config) { cfg.Login.MaxFailuresPerUserAddr = 100 })
		f.requireMFA(true)
		secret, _, _ := f.enrolAtSignIn(c)
		token := f.password("analyst", "analyst-password", "mfa_required")
		if r := f.do("POST", "/graphql", "", "", `{"query":"{ me { username } }"}`,
			map[string]string{"Cookie": "tifeeds_session=" + token, "Origin": f.srv.URL}); r.status != 401 {
			t.Errorf("the challenge token as a session: %d %s", r.status, r.body)
		}
		if r := f.do("GET", api+"/tenants/", "analyst", token, "", nil); r.status != 401 {
			t.Errorf("the challenge token as a key: %d", r.status)
		}
		// An enrolled user's challenge gets no new secret.
		if a := f.signIn("/api/login/mfa/enrol", map[string]any{"mfa_token": token}); a.status != 409 {
			t.Errorf("enrol with MFA on: %d %s", a.status, a.raw)
		}
		// Expired.
		storetest.MustExec(t, st, "UPDATE mfa_challenges SET expires_at = ?", time.Now().Add(-time.Second).UTC())
		c.add(30 * time.Second)
		if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "code": code(t, secret, c.Now())}); a.status != 401 || a.errCode() != "mfa_token_invalid" {
			t.Errorf("expired challenge: %d %s", a.status, a.raw)
		}
		// Five wrong codes end a challenge.
		token = f.password("analyst", "analyst-password", "mfa_required")
		for range store.MaxMFAChallengeAttempts {
			if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "code": "000000"}); a.status != 401 || a.errCode() != "wrong_code" {
				t.Fatalf("wrong code: %d %s", a.status, a.raw)
			}
		}
		if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "code": code(t, secret, c.Now())}); a.status != 401 || a.errCode() != "mfa_token_invalid" {
			t.Errorf("challenge after %d wrong codes: %d %s", store.MaxMFAChallengeAttempts, a.status, a.raw)
		}
		// Bounded input.
		if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "code": strings.Repeat("1", 100)}); a.status != 400 {
			t.Errorf("long code: %d %s", a.status, a.raw)
		}
		if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token}); a.status != 400 {
			t.Errorf("no code: %d %s", a.status, a.raw)
		}
	})
}

// TestWrongMFACodesAreThrottled: wrong codes count as failed sign-ins for
// the login throttle, like wrong passwords.
func TestWrongMFACodesAreThrottled(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		c := newClock()
		f.withMFA(c, func(cfg *server.Config) { cfg.Login.MaxFailuresPerUserAddr = 3 })
		f.requireMFA(true)
		secret, _, _ := f.enrolAtSignIn(c)
		c.add(30 * time.Second)
		token := f.password("analyst", "analyst-password", "mfa_required")
		for range 3 {
			if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "code": "999999"}); a.status != 401 {
				t.Fatalf("wrong code: %d %s", a.status, a.raw)
			}
		}
		// Even the right code waits now, and so does the password.
		a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "code": code(t, secret, c.Now())})
		if a.status != 429 || a.header.Get("Retry-After") == "" {
			t.Errorf("fourth code: %d %s", a.status, a.raw)
		}
		if a := f.signIn("/api/login", map[string]any{"username": "analyst", "password": "analyst-password"}); a.status != 429 {
			t.Errorf("password after wrong codes: %d %s", a.status, a.raw)
		}
		if n := len(f.auditActions(audit.MFARefused)); n != 3 {
			t.Errorf("%d refusals recorded, want 3", n)
		}
	})
}

// TestMFAOptional: root (or any user whose tenant does not require it)
// enrols from the Account page, needs a code at sign-in from then on, can
// replace the recovery codes and turn MFA off. API keys are never asked
// for a code, and cannot manage MFA.
func TestMFAOptional(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		c := newClock()
		f.withMFA(c)
		a := f.signIn("/api/login", map[string]any{"username": "admin", "password": "admin-password"})
		session := a.session()
		if a.status != 200 || session == "" {
			t.Fatalf("admin without MFA: %d %s", a.status, a.raw)
		}
		if g := f.gqlAs("admin", adminKey, `mutation { beginMfaEnrolment { secret } }`, nil, nil); g.code() != "FORBIDDEN" {
			t.Errorf("enrolment with an API key: %+v", g)
		}
		g := f.asSession(session, `mutation { beginMfaEnrolment { secret otpauthUrl qrCode } }`, nil)
		var begin struct {
			BeginMfaEnrolment struct{ Secret, OtpauthURL, QRCode string }
		}
		b, _ := json.Marshal(g.Data)
		_ = json.Unmarshal(b, &begin)
		secret := begin.BeginMfaEnrolment.Secret
		if secret == "" || !strings.HasPrefix(begin.BeginMfaEnrolment.QRCode, "data:image/png;base64,") {
			t.Fatalf("begin: %+v", g)
		}
		confirm := `mutation($c: String!) { confirmMfaEnrolment(code: $c) { codes } }`
		if g := f.asSession(session, confirm, map[string]any{"c": code(t, secret, c.Now().Add(90*time.Second))}); g.field() != "code" {
			t.Errorf("confirm with a code three steps ahead: %+v", g)
		}
		g = f.asSession(session, confirm, map[string]any{"c": code(t, secret, c.Now())})
		var conf struct{ ConfirmMfaEnrolment struct{ Codes []string } }
		b, _ = json.Marshal(g.Data)
		_ = json.Unmarshal(b, &conf)
		if len(conf.ConfirmMfaEnrolment.Codes) != 10 {
			t.Fatalf("confirm: %+v", g)
		}
		if m := f.meMFA(session); !m.Me.MfaEnabled || m.Me.MfaRequired {
			t.Errorf("me: %+v", m)
		}
		// The key is never asked for a code.
		if g := f.gqlAs("admin", adminKey, `{ me { username mfaEnabled } }`, nil, nil); len(g.Errors) != 0 {
			t.Errorf("API key with MFA on: %+v", g)
		}
		if r := f.rest("GET", "/tenants/", ""); r.status != 200 {
			t.Errorf("REST with an API key with MFA on: %d", r.status)
		}
		// The password alone no longer signs in.
		token := f.password("admin", "admin-password", "mfa_required")
		c.add(30 * time.Second)
		if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "code": code(t, secret, c.Now())}); a.status != 200 {
			t.Fatalf("admin code: %d %s", a.status, a.raw)
		}
		// New recovery codes, given a current code; the old ones die.
		regen := `mutation($c: String!) { regenerateMfaRecoveryCodes(code: $c) { codes } }`
		if g := f.asSession(session, regen, map[string]any{"c": code(t, secret, c.Now())}); g.field() != "code" {
			t.Errorf("regenerate with a used code: %+v", g)
		}
		c.add(30 * time.Second)
		g = f.asSession(session, regen, map[string]any{"c": code(t, secret, c.Now())})
		var regenerated struct{ RegenerateMfaRecoveryCodes struct{ Codes []string } }
		b, _ = json.Marshal(g.Data)
		_ = json.Unmarshal(b, &regenerated)
		if len(regenerated.RegenerateMfaRecoveryCodes.Codes) != 10 {
			t.Fatalf("regenerate: %+v", g)
		}
		token = f.password("admin", "admin-password", "mfa_required")
		if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "recovery_code": conf.ConfirmMfaEnrolment.Codes[0]}); a.status != 401 {
			t.Errorf("old recovery code: %d %s", a.status, a.raw)
		}
		if a := f.signIn("/api/login/mfa", map[string]any{"mfa_token": token, "recovery_code": regenerated.RegenerateMfaRecoveryCodes.Codes[0]}); a.status != 200 {
			t.Errorf("new recovery code: %d %s", a.status, a.raw)
		}
		// Off, with the password.
		off := `mutation($p: String) { disableMfa(password: $p) { mfaEnabled } }`
		if g := f.asSession(session, off, map[string]any{"p": "wrong-password"}); g.field() != "password" {
			t.Errorf("disable with a wrong password: %+v", g)
		}
		if g := f.asSession(session, off, map[string]any{"p": "admin-password"}); len(g.Errors) != 0 || !strings.Contains(string(g.Data["disableMfa"]), `"mfaEnabled":false`) {
			t.Errorf("disable: %+v", g)
		}
		if a := f.signIn("/api/login", map[string]any{"username": "admin", "password": "admin-password"}); a.status != 200 || a.session() == "" {
			t.Errorf("after disabling: %d %s", a.status, a.raw)
		}
	})
}

// TestResetUserMfa: a tenant that requires MFA keeps its users from
// turning it off; root resets a user's MFA, and the user enrols again at
// the next sign-in.
func TestResetUserMfa(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		c := newClock()
		f.withMFA(c)
		f.requireMFA(true)
		secret, session, _ := f.enrolAtSignIn(c)
		c.add(30 * time.Second)
		g := f.asSession(session, `mutation($c: String) { disableMfa(code: $c) { mfaEnabled } }`, map[string]any{"c": code(t, secret, c.Now())})
		if g.field() != "mfa" {
			t.Errorf("disable when the tenant requires MFA: %+v", g)
		}
		reset := `mutation($id: ID!) { resetUserMfa(id: $id) { username mfaEnabled } }`
		id := userID(t, st, "analyst")
		if g := f.asSession(session, reset, map[string]any{"id": id}); g.code() != "FORBIDDEN" {
			t.Errorf("a tenant user resets MFA: %+v", g)
		}
		g = f.gqlAs("admin", adminKey, reset, map[string]any{"id": id}, nil)
		if len(g.Errors) != 0 || !strings.Contains(string(g.Data["resetUserMfa"]), `"mfaEnabled":false`) {
			t.Fatalf("reset: %+v", g)
		}
		if ev := f.lastAudit(); ev.Action != audit.UserMFAReset || ev.TargetName != "analyst" || ev.Actor != "admin" {
			t.Errorf("audit: %+v", ev)
		}
		f.password("analyst", "analyst-password", "mfa_enrolment_required")
		// Once the tenant no longer requires it, the reset user signs in
		// with the password alone.
		f.requireMFA(false)
		if a := f.signIn("/api/login", map[string]any{"username": "analyst", "password": "analyst-password"}); a.status != 200 || a.session() == "" {
			t.Errorf("after the requirement ends: %d %s", a.status, a.raw)
		}
	})
}

// TestMFACodeOnceAcrossInstances: two instances on one PostgreSQL database
// accept a code once between them, even sent to both at once.
func TestMFACodeOnceAcrossInstances(t *testing.T) {
	dsn := storetest.NewPostgresDSN(t)
	ctx := context.Background()
	open := func() *store.Store {
		st, err := store.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	st1, st2 := open(), open()
	f := newFixture(t, st1)
	c := newClock()
	f.withMFA(c)
	other := mfaServer(t, st2, c)
	f.requireMFA(true)
	secret, _, _ := f.enrolAtSignIn(c)
	for round := range 3 {
		c.add(30 * time.Second)
		tokens := []string{f.password("analyst", "analyst-password", "mfa_required"), f.password("analyst", "analyst-password", "mfa_required")}
		srvs := []*httptest.Server{f.srv, other}
		cd := code(t, secret, c.Now())
		var wg sync.WaitGroup
		statuses := make([]int, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				statuses[i] = postJSON(t, srvs[i], "/api/login/mfa", map[string]any{"mfa_token": tokens[i], "code": cd}).status
			}()
		}
		wg.Wait()
		if !(statuses[0] == 200 && statuses[1] == 401 || statuses[0] == 401 && statuses[1] == 200) {
			t.Errorf("round %d: one code on two instances: %v, want one 200 and one 401", round, statuses)
		}
	}
}
