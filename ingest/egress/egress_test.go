package egress_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ioc"
)

func TestForbidden(t *testing.T) {
	for name, tc := range map[string]struct {
		addr    string
		refused bool
	}{
		"loopback v4":        {"127.0.0.1", true},
		"loopback v4 other":  {"127.255.0.9", true},
		"loopback v6":        {"::1", true},
		"mapped loopback":    {"::ffff:127.0.0.1", true},
		"10/8":               {"10.1.2.3", true},
		"172.16/12":          {"172.31.255.1", true},
		"192.168/16":         {"192.168.0.1", true},
		"shared 100.64/10":   {"100.100.100.200", true},
		"metadata":           {"169.254.169.254", true},
		"mapped metadata":    {"::ffff:169.254.169.254", true},
		"fe80::/10":          {"fe80::1", true},
		"fc00::/7":           {"fd12:3456::1", true},
		"unspecified v4":     {"0.0.0.0", true},
		"this network":       {"0.1.2.3", true},
		"unspecified v6":     {"::", true},
		"multicast v4":       {"224.0.0.1", true},
		"multicast v6":       {"ff02::1", true},
		"broadcast":          {"255.255.255.255", true},
		"public v4":          {"8.8.8.8", false},
		"public v4 near 172": {"172.32.0.1", false},
		"public mapped":      {"::ffff:1.1.1.1", false},
		"public v6":          {"2001:4860:4860::8888", false},

		// The IANA special-purpose registries (IPv4 and IPv6), range by
		// range: what is not globally reachable is refused, and an IPv6
		// address that embeds an IPv4 one is judged by what it embeds.
		"IETF protocol 192.0.0/24":    {"192.0.0.8", true},
		"PCP anycast 192.0.0.9":       {"192.0.0.9", true},
		"TEST-NET-1":                  {"192.0.2.1", true},
		"TEST-NET-2":                  {"198.51.100.7", true},
		"TEST-NET-3":                  {"203.0.113.9", true},
		"benchmarking 198.18/15":      {"198.19.255.1", true},
		"public near 198.18/15":       {"198.20.0.1", false},
		"6to4 relay anycast":          {"192.88.99.1", true},
		"reserved 240/4":              {"240.0.0.1", true},
		"reserved 240/4 top":          {"254.255.255.254", true},
		"AS112 192.31.196/24":         {"192.31.196.1", false},
		"AMT 192.52.193/24":           {"192.52.193.1", false},
		"AS112 192.175.48/24":         {"192.175.48.1", false},
		"public near 192.0.0/24":      {"192.0.1.1", false},
		"mapped TEST-NET":             {"::ffff:192.0.2.1", true},
		"NAT64 loopback":              {"64:ff9b::127.0.0.1", true},
		"NAT64 metadata":              {"64:ff9b::169.254.169.254", true},
		"NAT64 private":               {"64:ff9b::10.0.0.1", true},
		"NAT64 public":                {"64:ff9b::8.8.8.8", false},
		"NAT64 local-use":             {"64:ff9b:1::8.8.8.8", true},
		"6to4 loopback":               {"2002:7f00:1::1", true},
		"6to4 private":                {"2002:c0a8:101::", true},
		"6to4 public":                 {"2002:808:808::1", false},
		"IPv4-compatible loopback":    {"::127.0.0.1", true},
		"IPv4-compatible private":     {"::10.0.0.1", true},
		"IPv4-compatible this net":    {"::0.0.0.2", true},
		"IPv4-compatible public":      {"::8.8.8.8", false},
		"IPv4-translated loopback":    {"::ffff:0:127.0.0.1", true},
		"IPv4-translated public":      {"::ffff:0:8.8.8.8", false},
		"Teredo":                      {"2001:0:4136:e378:8000:63bf:3fff:fdd2", true},
		"IETF protocol 2001::/23":     {"2001:2::1", true},
		"ORCHIDv2":                    {"2001:20::1", true},
		"documentation 2001:db8::/32": {"2001:db8::1", true},
		"documentation 3fff::/20":     {"3fff:fff::1", true},
		"public near 3fff::/20":       {"3fff:1000::1", false},
		"AS112 2620:4f:8000::/48":     {"2620:4f:8000::1", false},
		"discard-only 100::/64":       {"100::1", true},
		"SRv6 5f00::/16":              {"5f00::1", true},
		"site-local fec0::/10":        {"fec0::1", true},
		"outside 2000::/3":            {"4000::1", true},
		"zoned documentation":         {"2001:db8::1%eth0", true},
		"zoned public":                {"2001:4860:4860::8888%eth0", false},
	} {
		t.Run(name, func(t *testing.T) {
			why := egress.Forbidden(netip.MustParseAddr(tc.addr))
			if (why != "") != tc.refused {
				t.Fatalf("Forbidden(%s) = %q, want refused %v", tc.addr, why, tc.refused)
			}
		})
	}
}

func TestLegacyIPv4(t *testing.T) {
	for name, tc := range map[string]struct {
		host string
		want string // "" when not an address
	}{
		"short":          {"127.1", "127.0.0.1"},
		"decimal":        {"2130706433", "127.0.0.1"},
		"octal":          {"0177.0.0.1", "127.0.0.1"},
		"hex":            {"0x7f.0.0.1", "127.0.0.1"},
		"hex whole":      {"0x7f000001", "127.0.0.1"},
		"three parts":    {"10.1.258", "10.1.1.2"},
		"canonical":      {"192.0.2.7", "192.0.2.7"},
		"name":           {"example.com", ""},
		"hex-like name":  {"cafe.face", ""},
		"part too large": {"256.0.0.1", ""},
		"too many parts": {"1.2.3.4.5", ""},
		"overflow":       {"4294967296", ""},
	} {
		t.Run(name, func(t *testing.T) {
			a, ok := egress.LegacyIPv4(tc.host)
			got := ""
			if ok {
				got = a.String()
			}
			if got != tc.want {
				t.Fatalf("LegacyIPv4(%q) = %q, want %q", tc.host, got, tc.want)
			}
		})
	}
}

// TestRefusedDestinations dials every spelling of a refused address through
// the default client: each is refused at connect time, before any byte is
// sent, with an error naming the address and the setting. A server listens
// on the loopback port used, so an address that got through would answer.
func TestRefusedDestinations(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	client := egress.NewClient(egress.Options{ConnectTimeout: 2 * time.Second})
	for name, tc := range map[string]struct {
		host string
		addr string // the address the refusal names
	}{
		"127.0.0.1":          {"127.0.0.1", "127.0.0.1"},
		"127.1":              {"127.1", "127.0.0.1"},
		"decimal":            {"2130706433", "127.0.0.1"},
		"octal":              {"0177.0.0.1", "127.0.0.1"},
		"hex":                {"0x7f.0.0.1", "127.0.0.1"},
		"[::1]":              {"[::1]", "::1"},
		"[::ffff:127.0.0.1]": {"[::ffff:127.0.0.1]", "127.0.0.1"},
		"[::ffff:7f00:1]":    {"[::ffff:7f00:1]", "127.0.0.1"},
		"localhost resolved": {"localhost", ""},
		"10/8":               {"10.0.0.1", "10.0.0.1"},
		"172.16/12":          {"172.16.0.1", "172.16.0.1"},
		"192.168/16":         {"192.168.1.1", "192.168.1.1"},
		"metadata":           {"169.254.169.254", "169.254.169.254"},
		"fe80::1":            {"[fe80::1]", "fe80::1"},
		"fc00::1":            {"[fc00::1]", "fc00::1"},
		"0.0.0.0":            {"0.0.0.0", "0.0.0.0"},
		"[::]":               {"[::]", "::"},
		"224.0.0.1":          {"224.0.0.1", "224.0.0.1"},
		"ff02::1":            {"[ff02::1]", "ff02::1"},
		// Routed to the IPv4 loopback by a NAT64 gateway, a 6to4 relay
		// or an old stack: refused before any packet leaves.
		"NAT64 loopback":           {"[64:ff9b::7f00:1]", "64:ff9b::7f00:1"},
		"6to4 loopback":            {"[2002:7f00:1::1]", "2002:7f00:1::1"},
		"IPv4-compatible loopback": {"[::7f00:1]", "::7f00:1"},
		"TEST-NET-1":               {"192.0.2.1", "192.0.2.1"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := client.Get("http://" + tc.host + ":" + port + "/")
			var refused *egress.RefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("GET %s: %v, want a refusal", tc.host, err)
			}
			if tc.addr != "" && refused.Addr.String() != tc.addr {
				t.Errorf("refusal names %s, want %s", refused.Addr, tc.addr)
			}
			if !strings.Contains(err.Error(), egress.Setting) {
				t.Errorf("refusal %q does not name the setting", err)
			}
			fe := ioc.HTTPRequestFailure("test", err)
			if k := ioc.FailureOf(fe); k != ioc.InvalidURL {
				t.Errorf("kind %q, want Invalid URL", k)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server was reached %d times", n)
	}
}

// listenOn serves h on ip (a loopback address of the 127/8 block).
func listenOn(t *testing.T, ip string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatalf("listen on %s: %v", ip, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestRedirects allows 127.0.0.1 and refuses 127.0.0.2: a redirect from an
// allowed server to a refused one, or to a URL with user information, is
// refused; the refused server is never reached.
func TestRedirects(t *testing.T) {
	var deniedHits atomic.Int64
	denied := listenOn(t, "127.0.0.2", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deniedHits.Add(1)
		w.Write([]byte("internal page"))
	}))
	allowed := listenOn(t, "127.0.0.1", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte("feed"))
		case "/to-denied":
			http.Redirect(w, r, denied.URL+"/secret", http.StatusFound)
		case "/to-userinfo":
			u, _ := url.Parse(r.Header.Get("X-Self"))
			u.User = url.UserPassword("u", "p")
			http.Redirect(w, r, u.String()+"/ok", http.StatusFound)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		}
	}))
	client := egress.NewClient(egress.Options{Deny: func(a netip.Addr) string {
		if a == netip.MustParseAddr("127.0.0.2") {
			return "refused by the test"
		}
		return ""
	}})
	get := func(path string) error {
		req, _ := http.NewRequest(http.MethodGet, allowed.URL+path, nil)
		req.Header.Set("X-Self", allowed.URL)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := get("/ok"); err != nil {
		t.Fatalf("allowed address: %v", err)
	}
	for name, tc := range map[string]struct {
		path string
		kind ioc.FailureKind
		want string
	}{
		"to refused address": {"/to-denied", ioc.InvalidURL, "127.0.0.2 is refused by the test"},
		"to user info":       {"/to-userinfo", ioc.InvalidURL, "user information"},
		"loop":               {"/loop", ioc.FetchingDataError, "redirects"},
	} {
		t.Run(name, func(t *testing.T) {
			err := get(tc.path)
			if err == nil {
				t.Fatal("no error")
			}
			fe := ioc.HTTPRequestFailure("test", err)
			if k := ioc.FailureOf(fe); k != tc.kind {
				t.Errorf("kind %q, want %q (%v)", k, tc.kind, fe)
			}
			if !strings.Contains(fe.Error(), tc.want) {
				t.Errorf("%q does not say %q", fe, tc.want)
			}
		})
	}
	if _, err := client.Get(denied.URL); err == nil {
		t.Error("the refused address answered directly")
	}
	if n := deniedHits.Load(); n != 0 {
		t.Fatalf("the refused server was reached %d times", n)
	}
}

func TestAllowPrivate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	resp, err := egress.NewClient(egress.Options{AllowPrivate: true}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if _, err := egress.NewClient(egress.Options{}).Get(srv.URL); err == nil {
		t.Fatal("the default policy fetched a loopback address")
	}
}

func TestUserInfoRefused(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://alice:s3cret@", 1)
	_, err := egress.NewClient(egress.Options{AllowPrivate: true}).Get(u)
	fe := ioc.HTTPRequestFailure("test", err)
	if k := ioc.FailureOf(fe); k != ioc.InvalidURL {
		t.Fatalf("kind %q, want Invalid URL (%v)", k, fe)
	}
	if strings.Contains(fe.Error(), "s3cret") {
		t.Fatalf("the error shows the password: %v", fe)
	}
	if hits.Load() != 0 {
		t.Fatal("the server was reached")
	}
}

// TestProxyFromEnvironmentIgnored: through a proxy the policy would judge
// the proxy's address, not the destination's, so feeds do not use one.
func TestProxyFromEnvironmentIgnored(t *testing.T) {
	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		w.Write([]byte("from the proxy"))
	}))
	defer proxy.Close()
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	client := egress.NewClient(egress.Options{AllowPrivate: true, ConnectTimeout: 2 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://feed.invalid/", nil)
	resp, err := client.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("the fetch went through the proxy")
	}
	if n := proxied.Load(); n != 0 {
		t.Fatalf("the proxy got %d requests", n)
	}
}
