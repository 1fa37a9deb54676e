package server

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/store"
)

// accountStore is what authentication asks of the store: API keys,
// sessions, passwords and the re-check of a websocket's credential.
type accountStore interface {
	AuthenticateAPIKey(ctx context.Context, username, key string) (*store.User, store.Credential, error)
	AuthenticateSession(ctx context.Context, token string) (*store.User, store.Credential, error)
	CheckPassword(ctx context.Context, username, password string) (*store.User, error)
	CheckCredential(ctx context.Context, c store.Credential) (*store.User, error)
	CreateSession(ctx context.Context, userID int64, ttl time.Duration) (string, error)
	DeleteSession(ctx context.Context, token string) error
	RecordKeyUse(id int64, t time.Time)
	mfaStore
}

const sessionCookie = "tifeeds_session"

// authenticate finds the caller: HTTP basic auth with an API key, or the
// dashboard's session cookie. Basic auth wins when both are sent.
func (s *Server) authenticate(r *http.Request) (*store.User, error) {
	u, _, err := s.authenticateCredential(r)
	return u, err
}

// requireUser answers 401 unless the request is authenticated.
func (s *Server) requireUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.authenticate(r)
		if err != nil {
			if badCredentials(err) {
				w.Header().Set("WWW-Authenticate", `Basic realm="tifeeds", charset="UTF-8"`)
			}
			s.refuseCaller(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithUser(r.Context(), u)))
	})
}

func badCredentials(err error) bool {
	return errors.Is(err, auth.ErrUnauthenticated) || errors.Is(err, store.ErrBadCredentials)
}

// refuseCaller answers a request whose caller authenticate could not
// establish. Credentials that could not be checked (the database is down)
// are a 503, never a 401, which clients take for wrong credentials; the
// cause is logged, not shown.
func (s *Server) refuseCaller(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case badCredentials(err):
		writeErr(w, r, auth.ErrUnauthenticated)
	case errors.Is(err, auth.ErrForbidden), errors.Is(err, context.DeadlineExceeded):
		// A request stopped at its work cap while authenticating says so,
		// like one stopped later.
		writeErr(w, r, err)
	default:
		s.log.ErrorContext(r.Context(), "Unable to authenticate a request", "method", r.Method, "path", r.URL.Path, "error", err)
		writeUnavailable(w)
	}
}

// secureCookie says whether the session cookie gets the Secure flag.
func (s *Server) secureCookie() bool { return s.cfg.TLSCert != "" || s.cfg.CookieSecure }

// requireRootToWrite lets every authenticated caller read and only root
// callers write (POST, PATCH, PUT, DELETE).
func requireRootToWrite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if _, err := auth.Require(r.Context(), store.ScopeRoot); err != nil {
				writeErr(w, r, err)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

type loginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

type loginResponse struct {
	Username string      `json:"username"`
	Scope    store.Scope `json:"scope"`
	// MustChangePassword: root reset the password; the session can do
	// nothing but changePassword.
	MustChangePassword bool `json:"must_change_password,omitempty"`
	// The password was right, but the user has MFA on (MFARequired) or must
	// enrol (MFAEnrolmentRequired): no session yet; MFAToken lets them
	// finish at POST /api/login/mfa.
	MFARequired          bool   `json:"mfa_required,omitempty"`
	MFAEnrolmentRequired bool   `json:"mfa_enrolment_required,omitempty"`
	MFAToken             string `json:"mfa_token,omitempty"`
	// RecoveryCodes, after an enrolment at sign-in: shown this once.
	RecoveryCodes []string `json:"recovery_codes,omitempty"`
}

// login checks a password and starts a session (startSession), unless
// the user must also give a TOTP code or enrol (askMFA).
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var req loginRequest
	if !s.readLoginBody(w, r, &req, "body must be a JSON object with username and password") {
		return
	}
	done, ok := s.loginSlot(w)
	if !ok {
		return
	}
	defer done()
	u, ok := s.checkLogin(w, r, req)
	if !ok {
		return
	}
	if s.ssoOnly(w, r, u) || s.askMFA(w, r, u) {
		return
	}
	s.startSession(w, r, u, "password", nil)
}

// readLoginBody reads the small JSON body of a sign-in step. A sign-in is
// read before anyone is authenticated: its body gets a short deadline of
// its own, and only then does it take one of the MaxLogins slots, so
// clients trickling bodies hold none. It answers the request itself when
// the body will not do.
func (s *Server) readLoginBody(w http.ResponseWriter, r *http.Request, v any, what string) bool {
	if err := http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.loginBodyTimeout())); err != nil &&
		!errors.Is(err, http.ErrNotSupported) {
		writeErr(w, r, err)
		return false
	}
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		var maxBytes *http.MaxBytesError
		var netErr net.Error
		switch {
		case errors.As(err, &maxBytes):
			writeErr(w, r, err)
		case errors.As(err, &netErr) && netErr.Timeout():
			// The connection cannot be read any more; the answer is
			// for the log.
			writeError(w, http.StatusRequestTimeout, "timeout", "the login body was not sent in time")
		default:
			writeError(w, http.StatusBadRequest, "invalid_json", what)
		}
		return false
	}
	return true
}

// loginSlot takes one of the MaxLogins slots, or answers 503.
func (s *Server) loginSlot(w http.ResponseWriter) (done func(), ok bool) {
	if s.logins.inFlight.Add(1) > int64(max(1, s.cfg.MaxLogins)) {
		s.logins.inFlight.Add(-1)
		retryAfterHeader(w, time.Second)
		writeError(w, http.StatusServiceUnavailable, "busy", "too many logins in progress; retry shortly")
		return nil, false
	}
	return func() { s.logins.inFlight.Add(-1) }, true
}

// startSession ends a sign-in: a session in an HttpOnly, SameSite cookie,
// and the audit record naming how the user signed in. SameSite=Strict plus
// the JSON-only GraphQL endpoint keeps other sites from riding the session.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, u *store.User, method string, recoveryCodes []string) {
	token, err := s.accounts.CreateSession(r.Context(), u.ID, s.cfg.SessionTTL)
	if err != nil {
		writeErr(w, r, err)
		return
	}
	s.resolver.Audit.RecordAs(r.Context(), &u.ID, u.Username, audit.SignIn, audit.UserTarget(u.ID, u.Username),
		map[string]any{"method": method})
	s.setSessionCookie(w, token)
	writeJSON(w, http.StatusOK, loginResponse{Username: u.Username, Scope: u.Scope,
		MustChangePassword: u.MustChangePassword, RecoveryCodes: recoveryCodes})
}

// ssoOnly refuses, and answers, the password sign-in of a user of a tenant
// that signs in through SAML; their API keys keep working. It is asked
// after the password is found right, so that the answer tells nobody else
// whether a name exists.
func (s *Server) ssoOnly(w http.ResponseWriter, r *http.Request, u *store.User) bool {
	if u.Scope != store.ScopeTenant || u.TenantID == nil {
		return false
	}
	t, err := s.tenantsDB.TenantFor(r.Context(), u, *u.TenantID)
	if err != nil {
		writeErr(w, r, err)
		return true
	}
	if t.AuthenticationMethod != store.AuthSSOSAML {
		return false
	}
	s.resolver.Audit.RecordAs(r.Context(), &u.ID, u.Username, audit.SignInFailed, audit.UserTarget(u.ID, u.Username),
		map[string]any{"method": "password", "reason": "sso_required"})
	writeError(w, http.StatusForbidden, "sso_required",
		"your organisation signs in through single sign-on: use \"Sign in with SSO\" with your organisation's id; API keys keep working")
	return true
}

// setSessionCookie hands the browser its session: the same cookie after a
// password or an SSO sign-in.
func (s *Server) setSessionCookie(w http.ResponseWriter, token string) {
	http.SetCookie(w, &http.Cookie{
		Name:     sessionCookie,
		Value:    token,
		Path:     "/",
		MaxAge:   int(s.cfg.SessionTTL / time.Second),
		HttpOnly: true,
		Secure:   s.secureCookie(),
		SameSite: http.SameSiteStrictMode,
	})
}

// loginBody is how long a client has to send a login's body: a username
// and a password take one packet.
const loginBody = 5 * time.Second

func (s *Server) loginBodyTimeout() time.Duration {
	if s.cfg.ReadTimeout > 0 {
		return min(loginBody, s.cfg.ReadTimeout)
	}
	return loginBody
}

// signOutBound is how long a sign-out may take once its client has gone:
// it finishes without the client, or the session it was asked to end would
// stay alive.
const signOutBound = 10 * time.Second

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), signOutBound)
		defer cancel()
		if err := s.endSession(ctx, c.Value); err != nil {
			writeErr(w, r, err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.secureCookie(), SameSite: http.SameSiteStrictMode})
	w.WriteHeader(http.StatusNoContent)
}
