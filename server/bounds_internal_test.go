package server

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// handshakeHeaders are those of a websocket opening handshake (RFC 6455,
// section 4.1), which a request can carry on any route and with any method.
const handshakeHeaders = "Connection: Upgrade\r\nUpgrade: websocket\r\n" +
	"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"

// TestUpgradeHeadersExemptNothing: websocket headers on a request that is
// not a websocket handshake on the websocket route leave it under both
// bounds: its work has a deadline, and a write that the client does not
// read is cut off. Only the real handshake on /graphql is exempt.
func TestUpgradeHeadersExemptNothing(t *testing.T) {
	s := &Server{cfg: Config{RequestTimeout: time.Minute, WriteIdleTimeout: 200 * time.Millisecond}}
	type outcome struct {
		deadline bool
		writeErr error
	}
	outcomes := make(chan outcome, 1)
	srv := httptest.NewServer(s.boundRequest(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, deadline := r.Context().Deadline()
		var err error
		if strings.HasPrefix(r.URL.Path, "/api/export/") {
			// The client reads nothing: the socket's buffers fill, then
			// only the write deadline ends this.
			chunk := make([]byte, 64<<10)
			for start := time.Now(); err == nil && time.Since(start) < 20*time.Second; {
				_, err = w.Write(chunk)
			}
		}
		outcomes <- outcome{deadline, err}
	})))
	defer srv.Close()

	send := func(t *testing.T, method, path, headers string) outcome {
		t.Helper()
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n", method, path, headers)
		select {
		case o := <-outcomes:
			return o
		case <-time.After(30 * time.Second):
			t.Fatalf("%s %s: the handler never ended", method, path)
			return outcome{}
		}
	}
	for _, tc := range []struct {
		name, method, path, headers string
	}{
		{"Upgrade alone on a REST route", "GET", "/connect/api/v1/tenants", "Upgrade: websocket\r\n"},
		{"a whole handshake on a TAXII route", "GET", "/taxii2/", handshakeHeaders},
		{"a handshake's headers on a POST to /graphql", "POST", "/graphql", handshakeHeaders + "Content-Length: 0\r\n"},
		{"a handshake without its key on /graphql", "GET", "/graphql", "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if o := send(t, tc.method, tc.path, tc.headers); !o.deadline {
				t.Errorf("no work deadline")
			}
		})
	}
	t.Run("a stalled export with a handshake's headers", func(t *testing.T) {
		if o := send(t, "GET", "/api/export/iocs.csv", handshakeHeaders); o.writeErr == nil {
			t.Errorf("a client reading nothing was written to for 20 s: no write deadline")
		}
	})
	t.Run("the websocket handshake on /graphql", func(t *testing.T) {
		if o := send(t, "GET", "/graphql", handshakeHeaders); o.deadline {
			t.Errorf("the websocket handshake got the request deadline: its socket would die with it")
		}
	})
}
