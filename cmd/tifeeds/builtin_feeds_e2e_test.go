package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin/vendortest"
)

// The key settings the kind tests set: none of them may ever show in the
// API, a run's details or the log.
const (
	otxKey       = "otx-e2e-secret-5f3c9a"
	abuseKey     = "abusech-e2e-secret-7d21b0"
	phishTankKey = "phishtank-e2e-secret-c4e8f1"
	etRepCode    = "9876543210e2ecode"
)

var e2eKeyEnv = map[string]string{
	"TIFEEDS_OTX_API_KEY": otxKey, "TIFEEDS_ABUSECH_AUTH_KEY": abuseKey,
	"TIFEEDS_PHISHTANK_APP_KEY": phishTankKey, "TIFEEDS_ET_REPUTATION_CODE": etRepCode,
}

// vendorSim is one kind's vendor, as the kind tests drive it.
type vendorSim struct {
	// hosts are the vendor hosts the kind reads, with their handlers.
	hosts map[string]http.Handler
	// change makes the second list: for a snapshot kind one entry dropped
	// and one added, for an incremental kind one record added.
	change func()
	// fail answers status (with Retry-After: 0, so that the source's own
	// retries take no time) to every request; 0 stops failing.
	fail func(status int)
	// throttleOnce answers the next request 429 with Retry-After: 0.
	throttleOnce func()
	// cut cuts the bodies half-way, changing the validators (ETag, md5, a
	// new event) so that the source downloads them, or restores both.
	cut func(on bool)
}

// kindE2E is one built-in kind's end-to-end case.
type kindE2E struct {
	kind   string
	vendor func(now time.Time) vendorSim
	// first are the IoCs stored by the first run, exactly.
	first []e2eIoC
	// second are the values live after the changed list (snapshot kinds:
	// the dropped one expired) or the added record (incremental kinds).
	second []string
	// expired is how many IoCs the second run expired (snapshot kinds).
	expired int
	// statuses are the failures the vendor answers with, beside 5xx, a cut
	// body and no connection, which every kind gets: status → error.
	statuses map[int]string
}

// kindCases are the eight built-in kinds' end-to-end cases. Their vendor
// data are dated from now, as the incremental kinds bound their first run
// by a backfill window.
var kindCases = []kindE2E{
	{
		kind: "OPEN_THREAT_EXCHANGE",
		first: []e2eIoC{
			{"IP", "203.0.113.10", 60, []string{"phishing", "t1059", "tlp:white"}},
			{"DOMAIN", "bad.example.com", 60, []string{"phishing", "t1059", "tlp:white"}},
			{"URL", "https://dl.example.net/a.exe", 70, []string{"cisa", "t1059", "tlp:white", "whirlpool"}},
		},
		second: []string{"203.0.113.10", "bad.example.com", "https://dl.example.net/a.exe", "new.example.org"},
		vendor: func(now time.Time) vendorSim {
			o := &vendortest.OTX{Key: otxKey, PageSize: 1, Pulses: [][]byte{
				otxPulse("p1", now.Add(-3*time.Hour), []string{"Phishing", "None"}, nil, "IPv4 203.0.113.10", "domain Bad.Example.com.", "FileHash-IMPHASH f34d5f2d4577ed6d9ceec516c1f5a744"),
				otxPulse("p2", now.Add(-2*time.Hour), []string{"CISA"}, []string{"WHIRLPOOL"}, "URL https://dl.example.net/a.exe"),
			}}
			return vendorSim{
				hosts: map[string]http.Handler{"otx.alienvault.com": o},
				change: func() {
					o.Pulses = append(o.Pulses, otxPulse("p3", now.Add(-time.Hour), nil, nil, "hostname new.example.org"))
				},
				fail:         func(status int) { o.FailStatus, o.FailTimes, o.RetryAfter = status, 0, "0" },
				throttleOnce: func() { o.FailStatus, o.FailTimes, o.RetryAfter = 429, 1, "0" },
				cut:          func(on bool) { o.CutPage = map[bool]int{true: 1}[on] },
			}
		},
		statuses: map[int]string{401: "Invalid Credentials", 403: "Invalid Credentials", 429: "Surpassed Query Limit"},
	},
	{
		kind: "GOVERNMENT",
		first: []e2eIoC{
			{"IP", "203.0.113.20", 90, []string{"malware:loader", "tlp:white"}},
			{"IP", "203.0.113.21", 90, []string{"malware:loader", "port:8080", "tlp:white"}},
			{"SHA256", "275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f", 30, []string{"malware:loader", "tlp:white"}},
			{"DOMAIN", "evil.example.com", 90, []string{"malware:loader", "tlp:white"}},
		},
		second: []string{"203.0.113.20", "203.0.113.21", "275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f", "evil.example.com", "new.example.org"},
		vendor: func(now time.Time) vendorSim {
			m1, e1 := circlEvent("5f1c2a3b-0000-4000-8000-00000000e2e1", now.Add(-3*time.Hour), 1,
				"ip-dst true 203.0.113.20", "ip-dst|port true 203.0.113.21|8080", "domain true Evil.Example.com", "url false http://benign.example.com/")
			m2, e2 := circlEvent("5f1c2a3b-0000-4000-8000-00000000e2e2", now.Add(-2*time.Hour), 3,
				"sha256 true 275a021bbfb6489e54d471899f7db9d1663fc695ec2fe2a2c4538aabf651fd0f")
			c := &vendortest.CIRCL{
				Manifest: mustJSON(map[string]any{m1["uuid"].(string): m1, m2["uuid"].(string): m2}),
				Events:   map[string][]byte{m1["uuid"].(string): e1, m2["uuid"].(string): e2},
			}
			return vendorSim{
				hosts: map[string]http.Handler{"www.circl.lu": c},
				change: func() {
					m3, e3 := circlEvent("5f1c2a3b-0000-4000-8000-00000000e2e3", now.Add(-time.Hour), 2, "hostname true new.example.org")
					c.Manifest = mustJSON(map[string]any{m1["uuid"].(string): m1, m2["uuid"].(string): m2, m3["uuid"].(string): m3})
					c.Events[m3["uuid"].(string)] = e3
				},
				fail:         func(status int) { c.FailStatus, c.FailTimes, c.RetryAfter = status, 0, "0" },
				throttleOnce: func() { c.FailStatus, c.FailTimes, c.RetryAfter = 429, 1, "0" },
				cut: func(on bool) {
					// A new event, cut: the ones read before are not read again.
					m4, e4 := circlEvent("5f1c2a3b-0000-4000-8000-00000000e2e4", now.Add(-30*time.Minute), 2, "hostname true cut.example.org")
					uuid := m4["uuid"].(string)
					var manifest map[string]any
					json.Unmarshal(c.Manifest, &manifest)
					delete(manifest, uuid)
					c.CutEvent = ""
					if on {
						manifest[uuid], c.Events[uuid], c.CutEvent = m4, e4, uuid
					}
					c.Manifest = mustJSON(manifest)
				},
			}
		},
		statuses: map[int]string{403: "Invalid Credentials", 429: "Surpassed Query Limit"},
	},
	{
		kind: "IP_DOMAIN_REPUTATION",
		first: []e2eIoC{
			{"IP", "2001:db8::30", 87, []string{"bot"}},
			{"IP", "203.0.113.30", 100, []string{"cnc"}},
			{"IP", "203.0.113.31", 75, []string{"brute_forcer", "scanner"}},
			{"DOMAIN", "c2.example.com", 94, []string{"cnc"}},
		},
		second: []string{"198.51.100.33", "2001:db8::30", "203.0.113.30", "c2.example.com"},
		vendor: func(now time.Time) vendorSim {
			e := &vendortest.ETReputation{Code: etRepCode,
				IPRep:       []byte(`{"203.0.113.30": {"CnC": "127"}, "203.0.113.31": {"Scanner": "40", "Brute_Forcer": "95"}, "2001:db8::30": {"Bot": "110"}}`),
				DomainRep:   []byte(`{"c2.example.com": {"CnC": "120"}, "*": {"Undesirable": "100"}, "*.dyn.example.org": {"DynDNS": "110"}}`),
				Compromised: []byte("# ET compromised\n192.0.2.40\n"),
			}
			return vendorSim{
				hosts: map[string]http.Handler{"rules.emergingthreatspro.com": e, "rules.emergingthreats.net": e},
				change: func() {
					e.IPRep = []byte(`{"203.0.113.30": {"CnC": "127"}, "2001:db8::30": {"Bot": "110"}, "198.51.100.33": {"Spam": "64"}}`)
				},
				fail:         func(status int) { e.FailStatus, e.FailTimes, e.RetryAfter = status, 0, "0" },
				throttleOnce: func() { e.FailStatus, e.FailTimes, e.RetryAfter = 429, 1, "0" },
				cut:          func(on bool) { e.CutList = map[bool]string{true: "iprepdata.json"}[on] },
			}
		},
		expired:  1,
		statuses: map[int]string{401: "Invalid Credentials", 403: "Invalid Credentials", 429: "Surpassed Query Limit"},
	},
	{
		kind: "IDS_RULES",
		first: []e2eIoC{
			{"IP", "192.0.2.50", 80, []string{"et cnc"}},
			{"IP", "198.51.100.7", 80, []string{"et cnc"}},
			{"RULE", "sid:2000001", 50, []string{"et malware", "trojan-activity"}},
			{"RULE", "sid:2000002", 50, []string{"bad-unknown", "et info"}},
			{"RULE", "sid:2404300", 80, []string{"et cnc", "trojan-activity"}},
		},
		second: []string{"192.0.2.50", "198.51.100.7", "sid:2000001", "sid:2000003", "sid:2404300"},
		vendor: func(now time.Time) vendorSim {
			h := &vendortest.ETOpen{Archive: vendortest.TarGz(map[string]string{
				"rules/emerging-malware.rules": "# comment\n" + etRuleHTTP + "\n#" + etRuleNew + "\n",
				"rules/botcc.rules":            etRuleIP + "\n",
				"rules/emerging-info.rules":    etRuleDNS + "\n",
				"rules/LICENSE":                "not rules\n",
			})}
			return vendorSim{
				hosts: map[string]http.Handler{vendortest.ETOpenHost: h},
				change: func() {
					h.Set(func(h *vendortest.ETOpen) {
						h.Archive = vendortest.TarGz(map[string]string{
							"rules/emerging-malware.rules": etRuleHTTP + "\n" + etRuleNew + "\n",
							"rules/botcc.rules":            etRuleIP + "\n",
						})
					})
				},
				fail: func(status int) {
					h.Set(func(h *vendortest.ETOpen) { h.Status, h.StatusTimes, h.RetryAfter = status, 0, "0" })
				},
				throttleOnce: func() { h.Set(func(h *vendortest.ETOpen) { h.Status, h.StatusTimes, h.RetryAfter = 429, 1, "0" }) },
				cut: func(on bool) {
					h.Set(func(h *vendortest.ETOpen) {
						h.Cut, h.MD5 = on, map[bool]string{true: "0123456789abcdef0123456789abcdef"}[on]
					})
				},
			}
		},
		expired:  1,
		statuses: map[int]string{401: "Invalid Credentials", 403: "Invalid Credentials", 429: "Surpassed Query Limit"},
	},
	{
		kind: "PHISHING_URL_DATABASE",
		first: []e2eIoC{
			{"URL", "http://203.0.113.50/amazon.com/signin", 80, []string{"phishing", "target:amazon.com"}},
			{"URL", "https://login.example.com/paypal/verify.php?id=1", 80, []string{"phishing", "target:paypal"}},
			{"URL", "https://secure.example.net/", 80, []string{"phishing"}},
		},
		second: []string{"https://login.example.com/paypal/verify.php?id=1", "https://new.example.org/m", "https://secure.example.net/"},
		vendor: func(now time.Time) vendorSim {
			p := &vendortest.PhishTank{Key: phishTankKey, ETag: `"v1"`, JSON: mustJSON([]any{
				phishTankRecord(9000001, "https://login.example.com/paypal/verify.php?id=1", "PayPal"),
				phishTankRecord(9000002, "http://203.0.113.50/amazon.com/signin", "Amazon.com"),
				phishTankRecord(9000003, "https://secure.example.net/", "Other"),
			})}
			return vendorSim{
				hosts: map[string]http.Handler{"data.phishtank.com": p},
				change: func() {
					p.ETag = `"v2"`
					p.JSON = mustJSON([]any{
						phishTankRecord(9000001, "https://login.example.com/paypal/verify.php?id=1", "PayPal"),
						phishTankRecord(9000003, "https://secure.example.net/", "Other"),
						phishTankRecord(9000004, "https://new.example.org/m", "Microsoft"),
					})
				},
				fail:         func(status int) { p.Status, p.StatusTimes, p.RetryAfter = status, 0, "0" },
				throttleOnce: func() { p.Status, p.StatusTimes, p.RetryAfter = 429, p.Requests()+1, "0" },
				cut: func(on bool) {
					p.CutAt, p.ETag = map[bool]int{true: 100}[on], map[bool]string{true: `"cut"`, false: `"v2"`}[on]
				},
			}
		},
		expired:  1,
		statuses: map[int]string{403: "Invalid Credentials", 429: "Surpassed Query Limit", 509: "Surpassed Query Limit"},
	},
	{
		kind: "MALWARE_URL_SSL",
		first: []e2eIoC{
			{"CERT_SHA1", "4da14224452c1fe61f46b1112c43ecfd9f322c82", 80, []string{"rhadamanthys"}},
			{"CERT_SHA1", "b785d1a9e5784703b98a96698ad05dff5e07229a", 80, []string{"dcrat"}},
			{"URL", "http://203.0.113.87:54591/i", 80, []string{"32-bit", "elf", "malware_download", "mozi"}},
			{"URL", "https://cdn.example.com/update/Invoice,2026.zip", 50, []string{"asyncrat", "malware_download", "zip"}},
		},
		second: []string{"4da14224452c1fe61f46b1112c43ecfd9f322c82", "6bef207908bfad6b19580067ce770bc820d3d2ef",
			"http://203.0.113.87:54591/i", "https://cdn.example.com/update/Invoice,2026.zip"},
		vendor: func(now time.Time) vendorSim {
			u := vendortest.NewURLhaus(urlhausCSV(
				fmt.Sprintf(`"3990005","%s","http://203.0.113.87:54591/i","online","","malware_download","32-bit,elf,Mozi","https://urlhaus.abuse.ch/url/3990005/","r1"`, abuseTime(now.Add(-time.Hour))),
				fmt.Sprintf(`"3990004","%s","https://cdn.example.com/update/Invoice,2026.zip","offline","","malware_download","zip, AsyncRAT ,None","https://urlhaus.abuse.ch/url/3990004/","r2"`, abuseTime(now.Add(-2*time.Hour))),
			))
			u.AuthKey, u.ETag = abuseKey, `"u1"`
			s := vendortest.NewSSLBL(sslblCSV(
				"2026-11-02 06:17:52,4DA14224452C1FE61F46B1112C43ECFD9F322C82,Rhadamanthys C&C",
				"2026-11-01 05:19:10,b785d1a9e5784703b98a96698ad05dff5e07229a,DCRat C&C",
			))
			s.AuthKey, s.ETag = abuseKey, `"s1"`
			return vendorSim{
				hosts: map[string]http.Handler{vendortest.URLhausHost: u, vendortest.SSLBLHost: s},
				change: func() {
					s.ETag = `"s2"`
					s.Body = sslblCSV(
						"2026-11-03 06:00:00,6bef207908bfad6b19580067ce770bc820d3d2ef,CobaltStrike C&C",
						"2026-11-02 06:17:52,4DA14224452C1FE61F46B1112C43ECFD9F322C82,Rhadamanthys C&C",
					)
				},
				fail: func(status int) {
					for _, a := range []*vendortest.AbuseCh{u, s} {
						a.Status, a.StatusTimes, a.RetryAfter = status, 0, "0"
					}
				},
				throttleOnce: func() {
					for _, a := range []*vendortest.AbuseCh{u, s} {
						a.Status, a.StatusTimes, a.RetryAfter = 429, a.Requests()+1, "0"
					}
				},
				cut: func(on bool) {
					for _, a := range []*vendortest.AbuseCh{u, s} {
						a.CutAt = map[bool]int{true: 150}[on]
					}
					u.ETag = map[bool]string{true: `"cut"`, false: `"u1"`}[on]
					s.ETag = map[bool]string{true: `"cut"`, false: `"s2"`}[on]
				},
			}
		},
		expired:  1,
		statuses: map[int]string{401: "Invalid Credentials", 402: "Surpassed Query Limit", 429: "Surpassed Query Limit"},
	},
	{
		kind: "PHISHING_URL_FEED",
		first: []e2eIoC{
			{"URL", "http://login.example.com/Owa/", 80, []string{"phishing"}},
			{"URL", "https://bank.example.net/step4.html", 80, []string{"phishing"}},
		},
		second: []string{"https://bank.example.net/step4.html", "https://new.example.org/p"},
		vendor: func(now time.Time) vendorSim {
			o := &vendortest.OpenPhish{}
			o.Set("http://login.example.com/Owa/\nhttps://bank.example.net/step4.html\n")
			return vendorSim{
				hosts:        map[string]http.Handler{vendortest.OpenPhishHost: o},
				change:       func() { o.Set("https://bank.example.net/step4.html\nhttps://new.example.org/p\n") },
				fail:         func(status int) { o.Fail(status, 0, "0") },
				throttleOnce: func() { o.Fail(429, 1, "0") },
				cut: func(on bool) {
					o.SetCut(on)
					o.Set(string(o.Body)) // a new ETag
				},
			}
		},
		expired:  1,
		statuses: map[int]string{401: "Invalid Credentials", 403: "Invalid Credentials", 429: "Surpassed Query Limit"},
	},
	{
		kind: "EMERGING_THREAT",
		first: []e2eIoC{
			{"IP", "203.0.113.71", 75, []string{"botnet_cc", "port:443", "valleyrat", "win.valley_rat", "winos"}},
			{"DOMAIN", "c2-panel.example.net", 100, []string{"botnet_cc", "c2", "rat", "valleyrat", "win.valley_rat", "winos"}},
			{"URL", "http://compromised.example.com/wp/x.php", 30, []string{"botnet_cc", "valleyrat", "win.valley_rat", "winos", "wordpress"}},
		},
		second: []string{"2001:db8::5", "203.0.113.71", "c2-panel.example.net", "http://compromised.example.com/wp/x.php"},
		vendor: func(now time.Time) vendorSim {
			row := func(t time.Time, id, value, typ, conf, comp, tags string) string {
				return fmt.Sprintf(`"%s", "%s", "%s", "%s", "botnet_cc", "win.valley_rat", "Winos,ValleyRAT", "ValleyRAT", "", "%s", "%s", "None", "%s", "0", "e2e"`,
					abuseTime(t), id, value, typ, conf, comp, tags)
			}
			rows := []string{
				row(now.Add(-time.Hour), "1793316", "c2-panel.example.net", "domain", "100", "False", "c2,RAT"),
				row(now.Add(-2*time.Hour), "1793315", "203.0.113.71:443", "ip:port", "75", "False", "None"),
				row(now.Add(-3*time.Hour), "1793314", "http://compromised.example.com/wp/x.php", "url", "90", "True", "wordpress"),
			}
			t := vendortest.NewThreatFox(threatFoxCSV(rows...))
			t.AuthKey = abuseKey
			return vendorSim{
				hosts: map[string]http.Handler{vendortest.ThreatFoxHost: t},
				change: func() {
					t.Body = threatFoxCSV(append([]string{row(now.Add(-time.Minute), "1793317", "[2001:db8::5]:8443", "ip:port", "80", "False", "CobaltStrike")}, rows...)...)
				},
				fail:         func(status int) { t.Status, t.StatusTimes, t.RetryAfter = status, 0, "0" },
				throttleOnce: func() { t.Status, t.StatusTimes, t.RetryAfter = 429, t.Requests()+1, "0" },
				cut:          func(on bool) { t.CutAt = map[bool]int{true: 300}[on] },
			}
		},
		statuses: map[int]string{401: "Invalid Credentials", 402: "Surpassed Query Limit", 429: "Surpassed Query Limit"},
	},
}

// gateAll holds every one of the hosts' answers until open is closed.
func gateAll(srv *vendortest.Server, hosts map[string]http.Handler, open chan struct{}) {
	for host, h := range hosts {
		srv.Handle(host, &gate{next: h, open: open})
	}
}

func sameIoCs(a, b []e2eIoC) bool {
	return slices.EqualFunc(a, b, func(a, b e2eIoC) bool {
		return a.Type == b.Type && a.Value == b.Value && a.Score == b.Score && slices.Equal(a.Tags, b.Tags)
	})
}

// TestBuiltinFeedsE2E runs every built-in kind through the real server and
// its vendor's simulator: Initializing then Running, the exact IoCs stored,
// the changed list (snapshot kinds expire what was dropped; incremental
// kinds add only what is new), an unchanged vendor that stores nothing and
// duplicates nothing, each failure's status after which nothing expired,
// and no key setting in the API, the runs or the log.
func TestBuiltinFeedsE2E(t *testing.T) {
	for name, dsn := range dbs {
		t.Run(name, func(t *testing.T) {
			for _, tc := range kindCases {
				t.Run(tc.kind, func(t *testing.T) { testKindE2E(t, dsn(t), tc) })
			}
		})
	}
}

func testKindE2E(t *testing.T, dsn string, tc kindE2E) {
	srv := vendortest.New(t)
	v := tc.vendor(time.Now())
	open := make(chan struct{})
	gateAll(srv, v.hosts, open)
	e := startBuiltinE2E(t, dsn, srv, e2eKeyEnv)
	kind := tc.kind

	deadline := time.Now().Add(20 * time.Second)
	for e.feed(kind).StatusMessage != "Initializing" {
		if time.Now().After(deadline) {
			t.Fatalf("first run not Initializing: %+v", e.feed(kind))
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(open)
	f := e.waitRun(kind, "")
	got := e.iocs(f.ID)
	if f.StatusMessage != "Running" || f.Status != "SUCCESS" || f.LastRun.Stored != len(tc.first) {
		t.Fatalf("after the first run: %+v %+v\nstored %+v\n%s", f, f.LastRun, got, e.stderr.String())
	}
	if !sameIoCs(got, tc.first) {
		t.Fatalf("stored %+v\nwant   %+v", got, tc.first)
	}

	// The changed list.
	v.change()
	f = e.runNow(kind)
	if f.StatusMessage != "Running" || !slices.Equal(e.values(f.ID), tc.second) {
		t.Fatalf("after the changed list: %s %+v, %q; want Running, %q", f.StatusMessage, f.LastRun, e.values(f.ID), tc.second)
	}
	if tc.expired > 0 && !strings.Contains(f.LastRun.Note, fmt.Sprintf("%d IoCs no longer listed expired", tc.expired)) {
		t.Errorf("note of the changed run: %q", f.LastRun.Note)
	}

	// Unchanged: nothing stored, nothing duplicated, nothing expired.
	f = e.runNow(kind)
	if f.StatusMessage != "Running" || f.LastRun.Stored != 0 || !slices.Equal(e.values(f.ID), tc.second) {
		t.Fatalf("unchanged vendor: %s %+v, %q", f.StatusMessage, f.LastRun, e.values(f.ID))
	}

	// One 429 with Retry-After is waited out: the run succeeds, having
	// asked again.
	asked := len(srv.Requests())
	v.throttleOnce()
	f = e.runNow(kind)
	if f.StatusMessage != "Running" || !slices.Equal(e.values(f.ID), tc.second) || len(srv.Requests()) < asked+2 {
		t.Fatalf("one 429: %s %+v, %q, %d requests", f.StatusMessage, f.LastRun, e.values(f.ID), len(srv.Requests())-asked)
	}
	v.fail(0)

	// Failures: the status says which, and nothing expires.
	type failure struct {
		status int
		cut    bool
		want   string
	}
	failures := map[string]failure{"503": {503, false, "Fetching Data Error"}, "cut body": {0, true, "Connection Error"}} // made, then cut (issue 11)
	for status, want := range tc.statuses {
		failures[fmt.Sprint(status)] = failure{status, false, want}
	}
	for name, fc := range failures {
		v.fail(fc.status)
		v.cut(fc.cut)
		f = e.runNow(kind)
		if f.StatusMessage != fc.want || f.Status != "ERROR" || f.LastRun.ErrorKind != fc.want {
			t.Errorf("%s: %s/%s %+v, want %s", name, f.Status, f.StatusMessage, f.LastRun, fc.want)
		}
		if got := e.values(f.ID); !slices.Equal(got, tc.second) {
			t.Errorf("%s: live values %q after a failed run, want %q", name, got, tc.second)
		}
		v.fail(0)
		v.cut(false)
	}
	// A failure does not lose the vendor: the next run is good again.
	f = e.runNow(kind)
	if f.StatusMessage != "Running" || !slices.Equal(e.values(f.ID), tc.second) {
		t.Errorf("recovered: %s %+v, %q", f.StatusMessage, f.LastRun, e.values(f.ID))
	}
	e.noKeyShown()
}

// noKeyShown fails the test if a key setting shows in the API (the feeds,
// their runs and rejections) or the log.
func (e *builtinE2E) noKeyShown() {
	e.t.Helper()
	var all struct {
		Feeds struct{ Nodes []struct{ ID string } }
	}
	e.gql(`{ feeds(first: 100) { nodes { id } } }`, nil, &all)
	var dump strings.Builder
	var feeds json.RawMessage
	e.gql(`{ feeds(first: 100) { nodes { `+feedFields+` collectionUrl username hasPassword cursor } } }`, nil, &feeds)
	dump.Write(feeds)
	for _, f := range all.Feeds.Nodes {
		var runs json.RawMessage
		if msg := e.gql(`query($id: ID!) { feedRuns(feedId: $id, first: 100) { id errorKind errorDetail note rejections { position reason } } }`,
			map[string]any{"id": f.ID}, &runs); msg != "" {
			e.t.Fatal(msg)
		}
		dump.Write(runs)
	}
	dump.WriteString(e.stderr.String())
	for _, k := range []string{otxKey, abuseKey, phishTankKey, etRepCode} {
		if strings.Contains(dump.String(), k) {
			e.t.Errorf("the key %q shows in the API, the runs or the log", k)
		}
	}
}

// TestBuiltinFeedsNoConnectionE2E: with the mirror unreachable, every
// built-in feed's run fails with Failed to connect to feed source.
func TestBuiltinFeedsNoConnectionE2E(t *testing.T) {
	for name, dsn := range dbs {
		t.Run(name, func(t *testing.T) {
			srv := vendortest.New(t)
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			closed := "http://" + l.Addr().String()
			l.Close()
			srv.URL = closed // nothing listens there any more
			e := startBuiltinE2E(t, dsn(t), srv, e2eKeyEnv)
			for _, tc := range kindCases {
				f := e.waitRun(tc.kind, "")
				if f.Status != "ERROR" || f.StatusMessage != "Failed to connect to feed source" ||
					f.LastRun.ErrorKind != "Failed to connect to feed source" {
					t.Errorf("%s: %s/%s %+v", tc.kind, f.Status, f.StatusMessage, f.LastRun)
				}
			}
			e.noKeyShown()
		})
	}
}

// TestBuiltinMissingKeyE2E: OTX without --otx-api-key fails with Invalid
// Credentials, a detail naming the setting, and no request to OTX.
func TestBuiltinMissingKeyE2E(t *testing.T) {
	for name, dsn := range dbs {
		t.Run(name, func(t *testing.T) {
			srv := vendortest.New(t)
			v := kindCases[0].vendor(time.Now())
			for h, handler := range v.hosts {
				srv.Handle(h, handler)
			}
			env := map[string]string{}
			for k, val := range e2eKeyEnv {
				if k != "TIFEEDS_OTX_API_KEY" {
					env[k] = val
				}
			}
			e := startBuiltinE2E(t, dsn(t), srv, env)
			f := e.waitRun("OPEN_THREAT_EXCHANGE", "")
			if f.Status != "ERROR" || f.StatusMessage != "Invalid Credentials" || f.LastRun.ErrorKind != "Invalid Credentials" ||
				!strings.Contains(f.LastRun.ErrorDetail, "--otx-api-key") {
				t.Errorf("OTX without a key: %s/%s %+v", f.Status, f.StatusMessage, f.LastRun)
			}
			if f.MissingSetting == nil || !strings.Contains(*f.MissingSetting, "--otx-api-key") {
				t.Errorf("missingSetting %v", f.MissingSetting)
			}
			for _, r := range srv.Requests() {
				if r.URL.Host == "otx.alienvault.com" {
					t.Errorf("OTX asked without a key: %s", r.URL)
				}
			}
			e.noKeyShown()
		})
	}
}
