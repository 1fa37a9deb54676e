package server

import (
	"errors"
	"io"
	"net/http"

	"github.com/99designs/gqlgen/graphql/handler/transport"
	"github.com/gorilla/websocket"
)

// gorillaWebsocket runs gqlgen's websocket transport on gorilla/websocket.
type gorillaWebsocket struct {
	upgrader websocket.Upgrader
}

// newGorillaWebsocket upgrades the requests checkOrigin accepts.
func newGorillaWebsocket(checkOrigin func(*http.Request) bool) gorillaWebsocket {
	return gorillaWebsocket{upgrader: websocket.Upgrader{CheckOrigin: checkOrigin}}
}

func (g gorillaWebsocket) Accept(w http.ResponseWriter, r *http.Request, opts transport.WebsocketAcceptOptions) (transport.WebsocketConn, error) {
	up := g.upgrader
	up.Subprotocols = opts.Subprotocols
	conn, err := up.Upgrade(w, r, opts.ResponseHeader)
	if err != nil {
		return nil, err
	}
	return gorillaConn{conn}, nil
}

type gorillaConn struct{ *websocket.Conn }

// NextReader reports a normal close as transport.ErrWebsocketClosed, as the
// transport expects.
func (c gorillaConn) NextReader() (int, io.Reader, error) {
	mt, r, err := c.Conn.NextReader()
	var ce *websocket.CloseError
	if errors.As(err, &ce) && (ce.Code == websocket.CloseNormalClosure || ce.Code == websocket.CloseNoStatusReceived) {
		return mt, nil, transport.ErrWebsocketClosed
	}
	return mt, r, err
}

func (c gorillaConn) WriteClose(code int, message string) error {
	return c.Conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(code, message))
}

var (
	_ transport.WebsocketConn          = gorillaConn{}
	_ transport.WebsocketReadLimiter   = gorillaConn{}
	_ transport.WebsocketReadDeadliner = gorillaConn{}
)
