package vendortest

// Generated volumes for benchmarks: the simulators below serve hundreds of
// thousands of indicators made as they are sent (the Generate fields and
// SetGzipList), so that the process serving them holds no copy of the
// list, and a page costs the same however far into the list it is.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"
)

// Generated value kinds, in the order GeneratedValue cycles through them.
const (
	GenIP = iota
	GenDomain
	GenURL
	GenSHA256
	GenKinds
)

// GeneratedValue returns the n-th generated value and its kind (one of
// the Gen constants, n%GenKinds): distinct for every n below 2^24, each
// valid for its kind. IPs are 11.0.0.0/8: documentation ranges are too
// small for bench volumes, and 10.0.0.0/8 is on the allowlist of reserved
// ranges.
func GeneratedValue(n int) (kind int, value string) {
	switch kind = n % GenKinds; kind {
	case GenIP:
		return kind, fmt.Sprintf("11.%d.%d.%d", n>>16&255, n>>8&255, n&255)
	case GenDomain:
		return kind, fmt.Sprintf("host-%d.bench.example.com", n)
	case GenURL:
		return kind, fmt.Sprintf("http://site-%d.bench.example.org/path/%d?id=%d", n%10007, n, n)
	default:
		return kind, fmt.Sprintf("%064x", uint64(n)*2654435761)
	}
}

// ThreatStreamObject is the n-th generated ThreatStream object: update_id
// n+1, modified at modified, its value GeneratedValue(n).
func ThreatStreamObject(n int, modified time.Time) []byte {
	kind, value := GeneratedValue(n)
	typ := [GenKinds]string{"ip", "domain", "url", "hash"}[kind]
	return fmt.Appendf(nil, `{"id": %d, "update_id": %d, "type": %q, "value": %q, "status": "active", "confidence": %d, `+
		`"threatscore": 77, "itype": "c2_%s", "threat_type": "c2", "source": "Bench Analyst", "subtype": null, `+
		`"tags": [{"id": "t%d", "name": "Bench"}], "modified_ts": %q, "meta": {"severity": "high"}}`,
		n+1, n+1, typ, value, 50+n%50, typ, n%7, modified.UTC().Format(time.RFC3339Nano))
}

// serveGenerated answers a page of the Generated objects: those whose
// update_id is above gt, from offset, at most limit.
func (ts *ThreatStream) serveGenerated(w http.ResponseWriter, q url.Values, limit, offset int, gt int64) {
	start := int(min(max(gt, 0), int64(ts.Generated)))
	total := ts.Generated - start
	from := min(start+offset, ts.Generated)
	to := min(from+limit, ts.Generated)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `{"meta": {"total_count": %d, "offset": %d, "limit": %d, "took": 3, "next": `, total, offset, limit)
	if to < ts.Generated {
		nq := maps.Clone(q)
		nq.Set("offset", strconv.Itoa(to-start))
		n := "/api/v2/intelligence/?" + nq.Encode()
		if ts.AbsoluteNext {
			n = URL("api.threatstream.com", n)
		}
		j, _ := json.Marshal(n)
		bw.Write(j)
	} else {
		bw.WriteString("null")
	}
	bw.WriteString(`}, "objects": [`)
	for i := from; i < to; i++ {
		if i > from {
			bw.WriteString(",\n")
		}
		bw.Write(ts.Generate(i))
	}
	bw.WriteString("]}")
	bw.Flush()
}

// FalconIndicator is the n-th generated Falcon indicator: its _marker is
// at's Unix time followed by n in 8 hex digits (so markers grow with n),
// its value GeneratedValue(n).
func FalconIndicator(n int, at time.Time) []byte {
	kind, value := GeneratedValue(n)
	typ := [GenKinds]string{"ip_address", "domain", "url", "hash_sha256"}[kind]
	return fmt.Appendf(nil, `{"_marker": "%d%08x", "id": "%s_%d", "indicator": %q, "type": %q, "deleted": false, `+
		`"malicious_confidence": %q, "malware_families": ["Bench%d"], "actors": [], "threat_types": ["Criminal"], "last_updated": %d}`,
		at.Unix(), n, typ, n, value, typ, [4]string{"high", "medium", "low", "unverified"}[n%4], n%5, at.Unix())
}

// serveGenerated answers a page of the Generated indicators: those whose
// _marker is at or after from, at most limit. It finds the first by
// binary search, so Generate's markers must grow with n.
func (f *Falcon) serveGenerated(w http.ResponseWriter, from string, limit int) {
	marker := func(n int) string {
		var head struct {
			Marker string `json:"_marker"`
		}
		if err := json.Unmarshal(f.Generate(n), &head); err != nil || head.Marker == "" {
			panic(fmt.Sprintf("vendortest: generated Falcon indicator %d without a _marker", n))
		}
		return head.Marker
	}
	start := sort.Search(f.Generated, func(n int) bool { return marker(n) >= from })
	end := min(start+limit, f.Generated)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, `{"meta": {"query_time": 0.01, "powered_by": "vendortest", "trace_id": "t", `+
		`"pagination": {"offset": 0, "limit": %d, "total": %d}}, "resources": [`, limit, f.Generated-start)
	for n := start; n < end; n++ {
		if n > start {
			bw.WriteString(",\n")
		}
		bw.Write(f.Generate(n))
	}
	bw.WriteString(`], "errors": []}`)
	bw.Flush()
}

// GTIPackage returns the package of n generated objects from first
// (GeneratedValue(first...)), none of them benign, as a writer of its body.
func GTIPackage(first, n int) io.WriterTo {
	return writerTo(func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		bw.WriteString(`{"iocs": [`)
		for i := first; i < first+n; i++ {
			if i > first {
				bw.WriteString(",\n")
			}
			kind, value := GeneratedValue(i)
			typ := [GenKinds]string{"ip_address", "domain", "url", "file"}[kind]
			id, url := value, ""
			if kind == GenURL {
				id, url = fmt.Sprintf("%064x", uint64(i)*0x9e3779b97f4a7c15), value
			}
			fmt.Fprintf(bw, `{"data": {"id": %q, "type": %q, "attributes": {"url": %q, "tags": ["bench"], `+
				`"gti_assessment": {"threat_score": {"value": %d}, "verdict": {"value": "VERDICT_MALICIOUS"}}}, `+
				`"context_attributes": {"origin": "hunting", "tags": ["MalwareFamily%d"]}}}`, id, typ, url, 60+i%40, i%9)
		}
		bw.WriteString("]}")
		return bw.Flush()
	})
}

// writerTo adapts a function to io.WriterTo.
type writerTo func(w io.Writer) error

func (f writerTo) WriteTo(w io.Writer) (int64, error) {
	cw := &counter{w: w}
	err := f(cw)
	return cw.n, err
}

type counter struct {
	w io.Writer
	n int64
}

func (c *counter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// RiskListCSV writes a risk list (ip, domain, url or hash) of n generated
// rows in Recorded Future's CSV layout, EvidenceDetails JSON included:
// row i holds GeneratedValue(GenKinds*i + the list's kind).
func RiskListCSV(w io.Writer, list string, n int) error {
	kind := map[string]int{"ip": GenIP, "domain": GenDomain, "url": GenURL, "hash": GenSHA256}[list]
	bw := bufio.NewWriter(w)
	if list == "hash" {
		bw.WriteString(`"Name","Algorithm","Risk","RiskString","EvidenceDetails"` + "\n")
	} else {
		bw.WriteString(`"Name","Risk","RiskString","EvidenceDetails"` + "\n")
	}
	for i := range n {
		_, value := GeneratedValue(GenKinds*i + kind)
		bw.WriteString(`"` + value + `",`)
		if list == "hash" {
			bw.WriteString(`"SHA-256",`)
		}
		fmt.Fprintf(bw, `"%d","%d/64","{""EvidenceDetails"": [{""Rule"": ""Bench Rule %d"", ""CriticalityLabel"": ""Malicious"", `+
			`""EvidenceString"": ""%d sightings on 2 sources: Bench Source."", ""Timestamp"": ""2026-11-01T00:00:00.000Z"", ""Criticality"": 3.0}, `+
			`{""Rule"": ""Current C&C Server"", ""Criticality"": 4.0}]}"`+"\n", 25+i%75, 1+i%5, i%13, 1+i%50)
	}
	return bw.Flush()
}

// GzipRiskList returns RiskListCSV's list, gzip-compressed, for SetGzipList.
func GzipRiskList(list string, n int) ([]byte, error) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if err := RiskListCSV(zw, list, n); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// SetGzipList replaces list with a body already gzip-compressed (large
// lists: SetList would need their CSV text whole); its ETag changes.
func (rf *RecordedFuture) SetGzipList(list string, gz []byte) {
	rf.mu.Lock()
	defer rf.mu.Unlock()
	rf.ver++
	rf.lists[list] = gz
	rf.etags[list] = fmt.Sprintf(`"%s-%d"`, list, rf.ver)
}

// WriteSOCRadarDocument writes a feed-list document (a JSON array) of n
// generated items from first (GeneratedValue(first...)), as it goes.
func WriteSOCRadarDocument(w io.Writer, first, n int) error {
	bw := bufio.NewWriter(w)
	bw.WriteString("[")
	for i := first; i < first+n; i++ {
		if i > first {
			bw.WriteString(",\n")
		}
		kind, value := GeneratedValue(i)
		typ := [GenKinds]string{"ip", "domain", "url", "sha256"}[kind]
		fmt.Fprintf(bw, `{"feed": %q, "feed_type": %q, "first_seen_date": "2026-01-01 00:00:00", "latest_seen_date": "2026-01-02 00:00:00", `+
			`"maintainer_name": "SOCRadar", "extra_info": {"score": %d, "seen_count": %d}}`, value, typ, 50+i%50, 1+i%9)
	}
	bw.WriteString("]")
	return bw.Flush()
}
