package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// The vendors' records as the built-in kinds' end-to-end cases
// (builtin_feeds_e2e_test.go) build them: each vendor's own format.

// otxTime formats t as OTX does.
func otxTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000") }

func otxPulse(id string, modified time.Time, tags, families []string, indicators ...string) []byte {
	var inds []map[string]any
	for i, ind := range indicators {
		typ, val, _ := strings.Cut(ind, " ")
		inds = append(inds, map[string]any{"id": 1000 + i, "indicator": val, "type": typ, "created": otxTime(modified),
			"expiration": nil, "is_active": 1, "role": nil})
	}
	b, _ := json.Marshal(map[string]any{"id": id, "name": "Pulse " + id, "author_name": "e2e", "modified": otxTime(modified),
		"created": otxTime(modified.Add(-time.Hour)), "tlp": "white", "tags": tags, "malware_families": families,
		"attack_ids": []any{map[string]any{"id": "T1059"}}, "adversary": "", "indicators": inds})
	return b
}

func circlEvent(uuid string, ts time.Time, threat int, attrs ...string) (manifest map[string]any, event []byte) {
	var as []map[string]any
	for i, a := range attrs {
		f := strings.SplitN(a, " ", 3) // type to_ids value
		as = append(as, map[string]any{"category": "Network activity", "type": f[0], "to_ids": f[1] == "true", "value": f[2],
			"uuid": fmt.Sprintf("a0000000-0000-4000-8000-%012d", i), "timestamp": fmt.Sprint(ts.Unix()), "deleted": false})
	}
	tags := []map[string]any{{"name": "tlp:white"}, {"name": "Malware:Loader"}}
	manifest = map[string]any{"info": "OSINT " + uuid, "date": ts.Format("2006-01-02"), "timestamp": fmt.Sprint(ts.Unix()),
		"threat_level_id": threat, "uuid": uuid, "Tag": tags, "analysis": 2, "Orgc": map[string]any{"name": "CIRCL"}}
	event, _ = json.Marshal(map[string]any{"Event": map[string]any{"uuid": uuid, "info": "OSINT " + uuid,
		"date": ts.Format("2006-01-02"), "timestamp": fmt.Sprint(ts.Unix()), "publish_timestamp": fmt.Sprint(ts.Unix()),
		"threat_level_id": fmt.Sprint(threat), "published": true, "analysis": "2", "Tag": tags, "Attribute": as}})
	return manifest, event
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

const abuseHeader = "################################################################\n# abuse.ch e2e                                                 #\n################################################################\n#\n"

func abuseTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") }

func urlhausCSV(rows ...string) []byte {
	return []byte(abuseHeader + "# id,dateadded,url,url_status,last_online,threat,tags,urlhaus_link,reporter\n" + strings.Join(rows, "\n") + "\n")
}

func sslblCSV(rows ...string) []byte {
	return []byte(abuseHeader + "# Listingdate,SHA1,Listingreason\n" + strings.Join(rows, "\n") + "\n")
}

func threatFoxCSV(rows ...string) []byte {
	return []byte(abuseHeader + `# "first_seen_utc","ioc_id","ioc_value","ioc_type","threat_type","fk_malware","malware_alias","malware_printable","last_seen_utc","confidence_level","is_compromised","reference","tags","anonymous","reporter"` +
		"\n" + strings.Join(rows, "\n") + "\n")
}

const etRuleIP = `alert ip [192.0.2.50,198.51.100.7] any -> $HOME_NET any (msg:"ET CNC Feodo Tracker Reported CnC Server group 1"; reference:url,doc.emergingthreats.net/bin/view/Main/BotCC; threshold: type limit, track by_src, seconds 3600, count 1; classtype:trojan-activity; flowbits:set,ET.Evil; flowbits:set,ET.BotccIP; sid:2404300; rev:5000; metadata:signature_severity Major;)`
const etRuleHTTP = `alert http $HOME_NET any -> $EXTERNAL_NET any (msg:"ET MALWARE Example Loader CnC Checkin"; flow:established,to_server; http.method; content:"POST"; http.uri; content:"/gate.php"; classtype:trojan-activity; sid:2000001; rev:2; metadata:signature_severity Minor;)`
const etRuleDNS = `alert dns $HOME_NET any -> any any (msg:"ET INFO Observed DNS Query to example TLD"; dns.query; content:".example"; endswith; classtype:bad-unknown; sid:2000002; rev:1;)`
const etRuleNew = `alert tls $HOME_NET any -> $EXTERNAL_NET any (msg:"ET MALWARE New Stealer TLS SNI"; flow:established,to_server; tls.sni; content:"steal.example.com"; classtype:trojan-activity; sid:2000003; rev:1; metadata:signature_severity Major;)`

func phishTankRecord(id int, url, target string) map[string]any {
	return map[string]any{"phish_id": fmt.Sprint(id), "url": url, "phish_detail_url": fmt.Sprintf("http://www.phishtank.com/phish_detail.php?phish_id=%d", id),
		"submission_time": "2026-11-02T10:00:00+00:00", "verified": "yes", "verification_time": "2026-11-02T11:00:00+00:00", "online": "yes",
		"details": []map[string]any{{"ip_address": "192.0.2.9", "cidr_block": "192.0.2.0/24", "announcing_network": "64500", "rir": "arin", "country": "US"}},
		"target":  target}
}
