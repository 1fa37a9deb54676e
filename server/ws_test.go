package server_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

// wsClient speaks graphql-transport-ws to the server under test.
type wsClient struct {
	t    *testing.T
	conn *websocket.Conn
}

type wsMessage struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func (f *fixture) dialWS(header http.Header) *wsClient {
	f.t.Helper()
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 5 * time.Second}
	url := "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/graphql"
	conn, res, err := d.Dial(url, header)
	if err != nil {
		f.t.Fatalf("websocket dial: %v (%v)", err, res)
	}
	if conn.Subprotocol() != "graphql-transport-ws" {
		f.t.Fatalf("subprotocol = %q", conn.Subprotocol())
	}
	f.t.Cleanup(func() { conn.Close() })
	return &wsClient{t: f.t, conn: conn}
}

func (c *wsClient) send(msg any) {
	c.t.Helper()
	if err := c.conn.WriteJSON(msg); err != nil {
		c.t.Fatalf("websocket write: %v", err)
	}
}

// read returns the next message that is not a keep-alive ping, or the
// close error.
func (c *wsClient) read(timeout time.Duration) (wsMessage, error) {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		c.conn.SetReadDeadline(deadline)
		var m wsMessage
		if err := c.conn.ReadJSON(&m); err != nil {
			return m, err
		}
		if m.Type == "ping" {
			c.send(map[string]string{"type": "pong"})
			continue
		}
		if m.Type == "pong" {
			continue
		}
		return m, nil
	}
}

func (c *wsClient) init(payload map[string]any) {
	c.t.Helper()
	c.send(map[string]any{"type": "connection_init", "payload": payload})
	m, err := c.read(5 * time.Second)
	if err != nil || m.Type != "connection_ack" {
		c.t.Fatalf("connection_init: %+v %v", m, err)
	}
}

func (c *wsClient) subscribe(id, query string) {
	c.t.Helper()
	c.send(map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{"query": query}})
}

func basicHeader(user, key string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+key))
}

func TestWebsocketConnectionInitAuth(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		f := newFixture(t, st)
		for name, payload := range map[string]map[string]any{
			"no credentials":   {},
			"wrong key":        {"authorization": basicHeader("admin", adminKey+"x")},
			"wrong apiKey":     {"username": "admin", "apiKey": "nope-nope-nope-nope"},
			"not basic":        {"authorization": "Bearer " + adminKey},
			"unknown username": {"username": "mallory", "apiKey": adminKey},
		} {
			t.Run(name, func(t *testing.T) {
				c := f.dialWS(nil)
				c.send(map[string]any{"type": "connection_init", "payload": payload})
				m, err := c.read(5 * time.Second)
				var ce *websocket.CloseError
				if err == nil || !asCloseError(err, &ce) || ce.Code != 4403 {
					t.Errorf("got %+v, %v; want close 4403 Forbidden", m, err)
				}
			})
		}
		for name, payload := range map[string]map[string]any{
			"authorization":    {"authorization": basicHeader("admin", adminKey)},
			"Authorization":    {"Authorization": basicHeader("admin", adminKey)},
			"username, apiKey": {"username": "admin", "apiKey": adminKey},
		} {
			t.Run(name, func(t *testing.T) {
				c := f.dialWS(nil)
				c.init(payload)
			})
		}
		t.Run("session cookie on the upgrade", func(t *testing.T) {
			r := f.do("POST", "/api/login", "", "", `{"username":"admin","password":"admin-password"}`, nil)
			cookies := (&http.Response{Header: r.header}).Cookies()
			if len(cookies) != 1 {
				t.Fatalf("login: %d %s", r.status, r.body)
			}
			c := f.dialWS(http.Header{"Cookie": {cookies[0].Name + "=" + cookies[0].Value}})
			c.init(map[string]any{})
		})
		t.Run("tenant scope may not subscribe to feeds", func(t *testing.T) {
			c := f.dialWS(nil)
			c.init(map[string]any{"username": "analyst", "apiKey": f.tenantKey})
			c.subscribe("1", `subscription { feedStatusChanged { id } }`)
			m, err := c.read(5 * time.Second)
			if err != nil || !strings.Contains(string(m.Payload), "FORBIDDEN") {
				t.Errorf("got %+v %v, want a FORBIDDEN error", m, err)
			}
		})
		t.Run("foreign origin refused", func(t *testing.T) {
			d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
			url := "ws" + strings.TrimPrefix(f.srv.URL, "http") + "/graphql"
			_, res, err := d.Dial(url, http.Header{"Origin": {"https://evil.example"}})
			if err == nil || res == nil || res.StatusCode != http.StatusForbidden {
				t.Errorf("cross-origin upgrade: %v %v", res, err)
			}
		})
	})
}

func asCloseError(err error, target **websocket.CloseError) bool {
	ce, ok := err.(*websocket.CloseError)
	if ok {
		*target = ce
	}
	return ok
}
