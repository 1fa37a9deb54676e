package premium

import (
	"strings"
	"testing"
)

func TestParseEndpoint(t *testing.T) {
	for name, tc := range map[string]struct {
		raw, base     string
		shown, key    string
		collectionID  string
		errorContains string
	}{
		"spec shape": {raw: "https://api.feeds.test/v2/industry-finance.json?key=abc123&v=2",
			shown: "https://api.feeds.test/v2/industry-finance.json?v=2", key: "abc123", collectionID: "industry-finance"},
		"key last":                     {raw: "https://api.feeds.test/geo_eu.json?v=2&key=k%2Fz", shown: "https://api.feeds.test/geo_eu.json?v=2", key: "k/z", collectionID: "geo_eu"},
		"under the base":               {raw: "https://api.feeds.test/v2/x.json?key=k&v=2", base: "https://api.feeds.test/v2/", shown: "https://api.feeds.test/v2/x.json?v=2", key: "k", collectionID: "x"},
		"outside the base":             {raw: "https://evil.test/v2/x.json?key=k&v=2", base: "https://api.feeds.test/v2", errorContains: "must be under https://api.feeds.test/v2"},
		"base is not a prefix":         {raw: "https://api.feeds.test/v20/x.json?key=k&v=2", base: "https://api.feeds.test/v2", errorContains: "must be under"},
		"dot segments out of the base": {raw: "https://api.feeds.test/v2/../admin/x.json?key=k&v=2", base: "https://api.feeds.test/v2", errorContains: "must be under"},
		"encoded dots out of the base": {raw: "https://api.feeds.test/v2/%2e%2e/admin/x.json?key=k&v=2", base: "https://api.feeds.test/v2", errorContains: "must be under"},
		"encoded slash in the base":    {raw: "https://api.feeds.test/v2/a%2f..%2fb/x.json?key=k&v=2", base: "https://api.feeds.test/v2", errorContains: "must be under"},
		"another port than the base's": {raw: "https://api.feeds.test:8443/v2/x.json?key=k&v=2", base: "https://api.feeds.test/v2", errorContains: "must be under"},
		"no key":                       {raw: "https://api.feeds.test/x.json?v=2", errorContains: "?key="},
		"empty key":                    {raw: "https://api.feeds.test/x.json?key=&v=2", errorContains: "?key="},
		"no version":                   {raw: "https://api.feeds.test/x.json?key=k", errorContains: "v=2"},
		"not json":                     {raw: "https://api.feeds.test/x.xml?key=k&v=2", errorContains: ".json"},
		"odd collection id":            {raw: "https://api.feeds.test/a%20b.json?key=k&v=2", errorContains: ".json"},
		"ftp":                          {raw: "ftp://api.feeds.test/x.json?key=k&v=2", errorContains: "http or https"},
		"no host":                      {raw: "/x.json?key=k&v=2", errorContains: "http or https"},
		"credentials in the URL":       {raw: "https://u:p@api.feeds.test/x.json?key=k&v=2", errorContains: "user information"},
	} {
		t.Run(name, func(t *testing.T) {
			ep, err := ParseEndpoint(tc.raw, tc.base)
			if tc.errorContains != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errorContains) {
					t.Fatalf("err = %v, want one containing %q", err, tc.errorContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ep.URL != tc.shown || ep.Key != tc.key || ep.CollectionID != tc.collectionID {
				t.Fatalf("got %+v", ep)
			}
			back, err := WithKey(ep.URL, ep.Key)
			if err != nil {
				t.Fatal(err)
			}
			again, err := ParseEndpoint(back, tc.base)
			if err != nil || again != ep {
				t.Errorf("round trip %q gave %+v, %v", back, again, err)
			}
		})
	}
}

// TestSpecs checks the kind table against the spec's rules, so that an edit
// of the table cannot quietly break them.
func TestSpecs(t *testing.T) {
	if got := len(Specs()); got != 6 {
		t.Fatalf("%d kinds, the spec has 6", got)
	}
	for _, s := range Specs() {
		if s.Polling != (Range{1, 24}) || !s.Edits(PollingFrequency) {
			t.Errorf("%s: polling %+v, editable %v; the spec says 1 to 24 hours, settable", s.Kind, s.Polling, s.Edits(PollingFrequency))
		}
		if (s.Backfill != nil) != s.Edits(BackfillDays) || (s.Backfill != nil && *s.Backfill != Range{1, 30}) {
			t.Errorf("%s: backfill %v does not match its editable fields", s.Kind, s.Backfill)
		}
		if (s.Retention != nil) != s.Edits(RetentionPeriod) || (s.Retention != nil && *s.Retention != Range{1, 360}) {
			t.Errorf("%s: retention %v does not match its editable fields", s.Kind, s.Retention)
		}
		secrets := 0
		for _, f := range s.Editable {
			switch f {
			case Password, APIKey, ClientSecret, APIEndpoint:
				secrets++
			}
		}
		if secrets != 1 {
			t.Errorf("%s: %d secret fields; a feed keeps exactly one sealed secret", s.Kind, secrets)
		}
		for _, f := range s.RequiredToEnable {
			if !s.Edits(f) {
				t.Errorf("%s: %s is required to enable but not editable", s.Kind, f)
			}
		}
		if !s.Polling.Contains(s.DefaultPolling) || (s.Backfill != nil && !s.Backfill.Contains(s.DefaultBackfill)) ||
			(s.Retention != nil && !s.Retention.Contains(s.DefaultRetention)) {
			t.Errorf("%s: defaults out of range", s.Kind)
		}
		if s.Creatable != (len(s.Categories) > 0) || s.Creatable != (s.NamePrefix != "") {
			t.Errorf("%s: creatable kinds need categories and a name prefix", s.Kind)
		}
	}
	if s, _ := Lookup(RiskList); s.InitialRetention() != 14 || s.Retention != nil {
		t.Errorf("risk-list retention %d (settable %v), the spec fixes it at 14 days", s.InitialRetention(), s.Retention != nil)
	}
	if s, _ := Lookup(FeedList); s.MaxFeeds != 10 || s.PerPoll != 50000 || s.MaxBytes != 100<<20 {
		t.Errorf("feed-list limits %d feeds, %d per poll, %d bytes; the spec says 10, 50,000, 100 MB", s.MaxFeeds, s.PerPoll, s.MaxBytes)
	}
	if s, _ := Lookup(EndpointProtection); s.PerPoll != 50000 {
		t.Errorf("endpoint-protection per-poll limit %d, the spec says 50,000", s.PerPoll)
	}
}
