package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/events"
	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/store"
)

// DefaultSocketRecheck is how often an open websocket re-checks its
// credential when no revocation event arrived: it catches what events
// cannot announce (a session expiring) or lost (NOTIFY is not durable).
const DefaultSocketRecheck = 30 * time.Second

// recheckTimeout bounds one credential check of a socket.
const recheckTimeout = 5 * time.Second

// socket is an open websocket and the credential it was opened with.
type socket struct {
	cred  store.Credential
	close context.CancelFunc
}

// sockets is the registry of this instance's open websockets, so that a
// revocation closes those of the credentials it concerns.
type sockets struct {
	mu   sync.Mutex
	next int
	open map[int]*socket
}

type socketKey struct{}
type credentialKey struct{}

// withCredential records what authenticated the upgrade request.
func withCredential(ctx context.Context, c store.Credential) context.Context {
	return context.WithValue(ctx, credentialKey{}, c)
}

func credentialFrom(ctx context.Context) (store.Credential, bool) {
	c, ok := ctx.Value(credentialKey{}).(store.Credential)
	return c, ok
}

// authenticateCredential is authenticate with the credential used: HTTP
// basic auth with an API key, or the dashboard's session cookie. Basic auth
// wins when both are sent.
// A credential verified in the last CredentialTTL is taken from the cache
// (credcache.go); an API key's use is recorded in memory either way.
func (s *Server) authenticateCredential(r *http.Request) (*store.User, store.Credential, error) {
	var k [32]byte
	var check func() (*store.User, store.Credential, error)
	if username, key, ok := r.BasicAuth(); ok {
		k = credentialKeyOf("key", username, key)
		check = func() (*store.User, store.Credential, error) {
			return s.accounts.AuthenticateAPIKey(r.Context(), username, key)
		}
	} else if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		k = credentialKeyOf("session", "", c.Value)
		check = func() (*store.User, store.Credential, error) {
			return s.accounts.AuthenticateSession(r.Context(), c.Value)
		}
	} else {
		return nil, store.Credential{}, auth.ErrUnauthenticated
	}
	now := time.Now()
	e, ok, gen := s.creds.Get(k, now)
	if ok {
		if e.cred.APIKeyID != 0 {
			s.accounts.RecordKeyUse(e.cred.APIKeyID, now)
		}
		// A copy: handlers may not change the cached user.
		u := *e.user
		return &u, e.cred, nil
	}
	u, cred, err := check()
	if err != nil {
		return nil, cred, err
	}
	cached := *u
	s.creds.Put(k, cachedCredential{user: &cached, cred: cred}, gen, now)
	return u, cred, nil
}

// endSession ends the session of token and has its sockets closed, here and
// on the other instances.
func (s *Server) endSession(ctx context.Context, token string) error {
	u, _, lookupErr := s.accounts.AuthenticateSession(ctx, token)
	if err := s.accounts.DeleteSession(ctx, token); err != nil {
		return err
	}
	// Here at once, whatever the bus does (the revocation below drops the
	// user's other cached credentials).
	s.creds.Delete(credentialKeyOf("session", "", token))
	if lookupErr == nil { // else no live session, so no socket opened with it
		s.announceRevocation(events.Revocation{UserID: u.ID})
	}
	return nil
}

// openSocket registers a websocket authenticated by cred and returns the
// context it must run in: cancelled (which makes gqlgen close the socket)
// when the credential no longer holds. The registration ends with ctx.
func (s *Server) openSocket(ctx context.Context, cred store.Credential) context.Context {
	ctx, cancel := context.WithCancel(ctx)
	sock := &socket{cred: cred, close: cancel}
	s.sockets.mu.Lock()
	id := s.sockets.next
	s.sockets.next++
	if s.sockets.open == nil {
		s.sockets.open = map[int]*socket{}
	}
	s.sockets.open[id] = sock
	s.sockets.mu.Unlock()
	go func() {
		defer func() {
			s.sockets.mu.Lock()
			delete(s.sockets.open, id)
			s.sockets.mu.Unlock()
		}()
		tick := time.NewTicker(s.cfg.SocketRecheck)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				s.recheckSocket(ctx, sock)
			}
		}
	}()
	return context.WithValue(ctx, socketKey{}, sock)
}

// recheckSocket closes sock when its credential no longer holds. A store
// that does not answer closes nothing: operations are refused meanwhile
// (see checkSocketOperation).
func (s *Server) recheckSocket(ctx context.Context, sock *socket) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recheckTimeout)
	defer cancel()
	_, err := s.accounts.CheckCredential(ctx, sock.cred)
	switch {
	case errors.Is(err, store.ErrBadCredentials):
		s.log.Info("Closed a websocket: its credential no longer holds", "user_id", sock.cred.UserID)
		sock.close()
	case err != nil:
		s.log.Warn("Unable to re-check a websocket's credential", "user_id", sock.cred.UserID, "error", err)
	}
}

// revoked re-checks, in the background, the sockets of the user or tenant
// a revocation names. It is a bus handler: it must not block.
func (s *Server) revoked(r events.Revocation) {
	revokeCached(s.creds, r)
	s.sockets.mu.Lock()
	var hit []*socket
	for _, sock := range s.sockets.open {
		if r.UserID != 0 && sock.cred.UserID == r.UserID || r.TenantID != "" && sock.cred.TenantID == r.TenantID {
			hit = append(hit, sock)
		}
	}
	s.sockets.mu.Unlock()
	if len(hit) == 0 {
		return
	}
	go func() {
		for _, sock := range hit {
			s.recheckSocket(context.Background(), sock)
		}
	}()
}

// announceRevocation tells every instance that credentials of the user or
// tenant may have stopped holding, so their sockets re-check them.
func (s *Server) announceRevocation(r events.Revocation) {
	s.resolver.Events.PublishRevocation(r)
}

// checkSocketOperation re-checks a websocket's credential before each
// operation sent on it, so none runs once the key is revoked or the session
// ended, even before the socket is closed. HTTP requests were authenticated
// just now and pass through.
//
// A query or mutation sent on a socket gets the work deadline of an HTTP
// request (Config.RequestTimeout, which boundRequest gives HTTP requests
// and leaves the upgrade without), its credential check included; a
// subscription lives as long as the socket.
func (s *Server) checkSocketOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	sock, ok := ctx.Value(socketKey{}).(*socket)
	if !ok {
		return next(ctx)
	}
	cancel := context.CancelFunc(func() {})
	if op := graphql.GetOperationContext(ctx).Operation; s.cfg.RequestTimeout > 0 && op != nil && op.Operation != ast.Subscription {
		ctx, cancel = context.WithTimeout(ctx, s.cfg.RequestTimeout)
	}
	responses := s.checkedSocketOperation(ctx, sock, next)
	return func(ctx context.Context) *graphql.Response {
		resp := responses(ctx)
		if resp == nil {
			cancel()
		}
		return resp
	}
}

func (s *Server) checkedSocketOperation(ctx context.Context, sock *socket, next graphql.OperationHandler) graphql.ResponseHandler {
	checkCtx, cancel := s.workContext(ctx) // a subscription's ctx has no deadline
	u, err := s.accounts.CheckCredential(checkCtx, sock.cred)
	cancel()
	if err == nil {
		return next(auth.WithUser(ctx, u))
	}
	revoked := errors.Is(err, store.ErrBadCredentials)
	code, msg := graph.CodeUnauthenticated, "the credentials of this connection no longer hold"
	switch {
	case revoked:
	case errors.Is(err, context.DeadlineExceeded):
		code, msg = graph.CodeTimeout, "the request took longer than the server allows and was stopped"
	case store.IsUnavailable(err):
		s.log.Log(ctx, slog.LevelWarn, "Unable to check a websocket's credential: database unavailable", "user_id", sock.cred.UserID, "error", err)
		code, msg = graph.CodeUnavailable, "the database is unavailable; try again later"
	default:
		s.log.Log(ctx, slog.LevelWarn, "Unable to check a websocket's credential", "user_id", sock.cred.UserID, "error", err)
		code, msg = graph.CodeInternal, "unable to check the credentials of this connection"
	}
	sent := false
	return func(context.Context) *graphql.Response {
		if sent {
			// Closed once the refusal is written, so the client reads why.
			if revoked {
				sock.close()
			}
			return nil
		}
		sent = true
		return &graphql.Response{Errors: gqlerror.List{{Message: msg, Extensions: map[string]any{"code": code}}}}
	}
}
