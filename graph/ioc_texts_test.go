package graph_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/99designs/gqlgen/client"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
	"github.com/tifeeds/tifeeds/store/storetest"
)

func ruleInd(sid int64, source, text string) ioc.Indicator {
	return ioc.Indicator{Kind: ioc.Rule, Value: ioc.RuleValue(sid), Source: source, Score: 80, Tags: []string{"et cnc"}, Text: text}
}

const (
	alphaV1 = `alert ip $HOME_NET any -> [192.0.2.10] any (msg:"ET CNC Alpha Botnet"; classtype:trojan-activity; sid:2404300; rev:1;)`
	alphaV2 = `alert ip $HOME_NET any -> [192.0.2.10] any (msg:"ET CNC Alpha Botnet Renamed"; classtype:trojan-activity; sid:2404300; rev:2;)`
	betaA   = `alert dns any any -> any any (msg:"ET MALWARE Beta from list a"; dns.query; content:"beta.example"; sid:2030001; rev:1;)`
	betaB   = `alert dns any any -> any any (msg:"ET MALWARE Beta from list b"; dns.query; content:"beta.example"; sid:2030001; rev:1;)`
	certFP  = "3f2a5b3c8d1e0f9a7b6c5d4e3f2a1b0c9d8e7f6a"
)

type textResp struct {
	Iocs struct {
		Nodes []struct {
			Type  string
			Value string
			Text  *string
		}
	}
}

const textQuery = `query($f: IocFilter) { iocs(filter: $f, first: 100) { nodes { type value text } } }`

// TestRuleTexts: a rule's text is stored with it, the latest replaces the
// older, it is searchable, null for other kinds, and goes with its IoC.
func TestRuleTexts(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		feed := iocTestFeed(t, st, "rules")
		c := iocClient(t, st)
		ingestIoCs(t, st, feed, 30*24*time.Hour,
			ruleInd(2404300, "et-open", alphaV1),
			// Two sightings of one rule in a batch: the later text wins.
			ruleInd(2030001, "a", betaA),
			ruleInd(2030001, "b", betaB),
			ioc.Indicator{Kind: ioc.Domain, Value: "alpha.example.com", Source: "s", Score: 50},
		)
		// A new revision replaces the text; the same value stays one IoC.
		if _, err := st.ApplyBatch(context.Background(), store.Batch{FeedID: feed, Now: iocNow.Add(time.Hour), Retention: 30 * 24 * time.Hour,
			Indicators: []ioc.Indicator{ruleInd(2404300, "et-open", alphaV2)}}); err != nil {
			t.Fatal(err)
		}
		var all textResp
		c.MustPost(textQuery, &all, client.Var("f", nil))
		texts := map[string]*string{}
		for _, n := range all.Iocs.Nodes {
			texts[n.Value] = n.Text
		}
		if len(all.Iocs.Nodes) != 3 {
			t.Fatalf("%d IoCs, want 3: %+v", len(all.Iocs.Nodes), all.Iocs.Nodes)
		}
		for value, want := range map[string]string{"sid:2404300": alphaV2, "sid:2030001": betaB} {
			if got := texts[value]; got == nil || *got != want {
				t.Errorf("text of %s = %v, want %q", value, got, want)
			}
		}
		if got := texts["alpha.example.com"]; got != nil {
			t.Errorf("a domain has text %q, want null", *got)
		}

		for name, tc := range map[string]struct {
			filter map[string]any
			want   []string
		}{
			"text, any case":     {map[string]any{"search": "alpha botnet renamed"}, []string{"sid:2404300"}},
			"old text is gone":   {map[string]any{"search": `Alpha Botnet";`}, []string{}},
			"value or text":      {map[string]any{"search": "alpha"}, []string{"alpha.example.com", "sid:2404300"}},
			"text and type":      {map[string]any{"search": "alpha", "type": []string{"DOMAIN"}}, []string{"alpha.example.com"}},
			"text of the winner": {map[string]any{"search": "from list a"}, []string{}},
			"like escapes":       {map[string]any{"search": "list_b"}, []string{}},
		} {
			t.Run(name, func(t *testing.T) {
				var resp textResp
				c.MustPost(textQuery, &resp, client.Var("f", tc.filter))
				var got []string
				for _, n := range resp.Iocs.Nodes {
					got = append(got, n.Value)
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
					t.Errorf("search %v found %q, want %q", tc.filter, got, tc.want)
				}
			})
		}

		// Revoking the rule's only sighting deletes the IoC and its text.
		gone := ruleInd(2404300, "et-open", "")
		gone.Revoked = true
		ingestIoCs(t, st, feed, 30*24*time.Hour, gone)
		var n int
		if err := st.DB.NewSelect().Table("ioc_texts").ColumnExpr("count(*)").Scan(context.Background(), &n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("%d rule texts left, want 1 (the revoked rule's went with it)", n)
		}
	})
}

// TestCertSHA1Kind: a certificate fingerprint is its own kind, stored
// apart from a file SHA1 with the same digits and found by its type.
func TestCertSHA1Kind(t *testing.T) {
	storetest.EachDB(t, func(t *testing.T, st *store.Store) {
		feed := iocTestFeed(t, st, "sslbl")
		c := iocClient(t, st)
		ingestIoCs(t, st, feed, 30*24*time.Hour,
			ioc.Indicator{Kind: ioc.CertSHA1, Value: certFP, Source: "sslbl", Score: 80, Tags: []string{"dridex c&c"}},
			ioc.Indicator{Kind: ioc.SHA1, Value: certFP, Source: "files", Score: 40},
		)
		for name, tc := range map[string]struct {
			filter map[string]any
			want   []string
		}{
			"cert type":  {map[string]any{"type": []string{"CERT_SHA1"}}, []string{"CERT_SHA1 " + certFP}},
			"file type":  {map[string]any{"type": []string{"SHA1"}}, []string{"SHA1 " + certFP}},
			"cert value": {map[string]any{"type": []string{"CERT_SHA1"}, "value": "3F2A5B3C8D1E0F9A7B6C5D4E3F2A1B0C9D8E7F6A"}, []string{"CERT_SHA1 " + certFP}},
			"any type":   {map[string]any{"value": certFP}, []string{"CERT_SHA1 " + certFP, "SHA1 " + certFP}},
		} {
			t.Run(name, func(t *testing.T) {
				var resp textResp
				c.MustPost(textQuery, &resp, client.Var("f", tc.filter))
				var got []string
				for _, n := range resp.Iocs.Nodes {
					got = append(got, n.Type+" "+n.Value)
					if n.Text != nil {
						t.Errorf("%s has text %q", n.Value, *n.Text)
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, tc.want) {
					t.Errorf("found %q, want %q", got, tc.want)
				}
			})
		}
	})
}
