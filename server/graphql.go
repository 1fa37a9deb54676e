package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/graph"
)

// wsKeepAlive is how often idle subscription sockets are pinged, so proxies
// do not cut them.
const wsKeepAlive = 10 * time.Second

// graphqlHandler serves POST queries and mutations, and subscriptions over
// websocket (graphql-transport-ws). HTTP requests must be authenticated;
// websocket clients authenticate in connection_init (or with the upgrade
// request's cookie or basic auth).
func (s *Server) graphqlHandler() http.Handler {
	srv := handler.New(graph.NewSchema(s.resolver))
	srv.AddTransport(transport.Websocket{
		Implementation:        newGorillaWebsocket(s.websocketOrigin),
		KeepAlivePingInterval: wsKeepAlive,
		InitFunc:              s.websocketInit,
		InitTimeout:           10 * time.Second,
	})
	srv.AddTransport(transport.Options{})
	srv.AddTransport(answerPOST{})
	srv.Use(extension.Introspection{})
	graph.UseLimits(srv)
	graph.UseFastLookups(srv, s.resolver)
	srv.SetErrorPresenter(graph.ErrorPresenter)
	srv.AroundOperations(s.checkSocketOperation)
	srv.Use(subscriptionsOnSockets{})

	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if websocketUpgrade(r) {
			// The socket lives on, but its credential check is a request's
			// work and gets a request's deadline.
			ctx, cancel := s.workContext(r.Context())
			u, cred, err := s.authenticateCredential(r.WithContext(ctx))
			cancel()
			if err == nil {
				r = r.WithContext(withCredential(auth.WithUser(r.Context(), u), cred))
			}
			srv.ServeHTTP(w, r)
			return
		}
		u, cred, err := s.authenticateCredential(r)
		if err != nil {
			s.refuseCaller(w, r, err)
			return
		}
		// gqlgen reports an over-long body as a decode error; read it here so
		// the limit answers 413 like everywhere else.
		if r.Body != nil {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				writeErr(w, r, err)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		ctx := graph.WithLoaders(auth.WithSessionHash(auth.WithUser(r.Context(), u), cred.SessionHash), s.loaderStore)
		srv.ServeHTTP(w, r.WithContext(ctx))
	})
}

// workContext bounds work done for a long-lived socket (its credential
// checks) as boundRequest bounds a request's.
func (s *Server) workContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.cfg.RequestTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.cfg.RequestTimeout)
}

func websocketUpgrade(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// websocketInit authenticates a subscription client from connection_init:
// {"authorization": "Basic <base64 user:key>"} or {"username", "apiKey"}.
// A client already authenticated by cookie on the upgrade may send nothing.
func (s *Server) websocketInit(ctx context.Context, payload transport.InitPayload) (context.Context, *transport.InitPayload, error) {
	// graphql-transport-ws: a rejected connection closes with 4403 Forbidden.
	refused := transport.AppendCloseReason(transport.WithWebsocketCloseCode(ctx, 4403), "Forbidden")
	header := payload.Authorization()
	if header == "" {
		if v, ok := payload["Authorization"].(string); ok {
			header = v
		}
	}
	username, _ := payload["username"].(string)
	apiKey, _ := payload["apiKey"].(string)
	if header != "" || username != "" {
		if header != "" {
			req := &http.Request{Header: http.Header{"Authorization": {header}}}
			var ok bool
			if username, apiKey, ok = req.BasicAuth(); !ok {
				return refused, nil, errors.New("connection_init: authorization must be HTTP basic username:api_key")
			}
		}
		checkCtx, cancel := s.workContext(ctx)
		u, cred, err := s.accounts.AuthenticateAPIKey(checkCtx, username, apiKey)
		cancel()
		if err != nil {
			return refused, nil, fmt.Errorf("connection_init: %w", auth.ErrUnauthenticated)
		}
		return graph.WithLoaders(s.openSocket(auth.WithUser(ctx, u), cred), s.loaderStore), nil, nil
	}
	cred, ok := credentialFrom(ctx)
	if _, err := auth.UserFrom(ctx); err != nil || !ok {
		return refused, nil, fmt.Errorf("connection_init: %w", auth.ErrUnauthenticated)
	}
	return graph.WithLoaders(s.openSocket(ctx, cred), s.loaderStore), nil, nil
}

// subscriptionsOnSockets refuses a subscription sent anywhere but on a
// websocket, while the operation is validated: an HTTP answer can carry no
// stream of events, and gqlgen's POST transport would wait for the first
// one until the request timed out, then answer null. The refusal is
// gqlgen's own for an operation it cannot run (422, or 400 for
// application/graphql-response+json).
type subscriptionsOnSockets struct{}

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = subscriptionsOnSockets{}

func (subscriptionsOnSockets) ExtensionName() string { return "SubscriptionsOnSockets" }

func (subscriptionsOnSockets) Validate(graphql.ExecutableSchema) error { return nil }

func (subscriptionsOnSockets) MutateOperationContext(ctx context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	if opCtx.Operation == nil || opCtx.Operation.Operation != ast.Subscription {
		return nil
	}
	if _, onSocket := ctx.Value(socketKey{}).(*socket); onSocket {
		return nil
	}
	err := gqlerror.Errorf("subscriptions are served over the websocket (graphql-transport-ws on /graphql), not over HTTP")
	errcode.Set(err, errcode.ValidationFailed)
	return err
}
