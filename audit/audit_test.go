package audit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/audit"
	"github.com/tifeeds/tifeeds/store"
)

func TestFieldsMaskSecretsAndSkipWhatDidNotChange(t *testing.T) {
	name, secret, endpoint := "feed", "s3cret", "https://api.example/list?key=abc"
	in := struct {
		Name         *string
		Username     *string // not changed: absent
		Password     *string
		APIEndpoint  string
		ClientSecret *string
		Cleared      store.Opt[string]
		Contact      store.Opt[string] // not given: absent
		MFAEnabled   store.Opt[bool]
		SSOConfig    store.Opt[store.SSOConfig]
	}{Name: &name, Password: &secret, APIEndpoint: endpoint, ClientSecret: new(string),
		Cleared: store.Opt[string]{Set: true, Null: true}, MFAEnabled: store.Some(true),
		SSOConfig: store.Some(store.SSOConfig{})}
	b, _ := json.Marshal(audit.Fields(in))
	var got map[string]any
	json.Unmarshal(b, &got)
	want := map[string]any{"name": "feed", "password": "***", "apiEndpoint": "***", "clientSecret": "",
		"cleared": nil, "mfaEnabled": true}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	for _, k := range []string{"username", "contact"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s recorded though not changed: %s", k, b)
		}
	}
	if _, ok := got["ssoConfig"]; !ok {
		t.Errorf("ssoConfig not recorded: %s", b)
	}
	if s := string(b); contains(s, "s3cret") || contains(s, "key=abc") {
		t.Errorf("a secret shows: %s", s)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestNilLogRecordsNothing(t *testing.T) {
	var l *audit.Log
	l.Record(t.Context(), audit.FeedCreate, audit.Target{}, nil) // must not panic
}
