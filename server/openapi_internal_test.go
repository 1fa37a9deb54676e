package server

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/schema_validation"

	"github.com/tifeeds/tifeeds/graph"
	"github.com/tifeeds/tifeeds/server/openapi"
)

// TestOpenAPIDocumentIsValid validates the document against the OpenAPI
// 3.1 specification's schema.
func TestOpenAPIDocumentIsValid(t *testing.T) {
	doc, err := libopenapi.NewDocument(openapi.Document)
	if err != nil {
		t.Fatal(err)
	}
	if v := doc.GetVersion(); !strings.HasPrefix(v, "3.1.") {
		t.Fatalf("openapi %q, want 3.1.x", v)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			t.Errorf("%s", e)
			for _, f := range e.SchemaValidationErrors {
				t.Errorf("  %s at %s", f.Reason, f.KeywordLocation)
			}
		}
	}
	// Every $ref resolves (the model build reports the ones that do not).
	if _, err := doc.BuildV3Model(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenAPIExamplesMatchTheirSchemas: the examples a client generator or
// a gateway's mock shows are ones the schemas accept.
func TestOpenAPIExamplesMatchTheirSchemas(t *testing.T) {
	var raw struct {
		Components struct {
			Schemas map[string]struct{ Examples []any }
		}
	}
	if err := json.Unmarshal(openapi.Document, &raw); err != nil {
		t.Fatal(err)
	}
	schemas := contract.model.Components.Schemas
	seen := 0
	for name, s := range raw.Components.Schemas {
		for i, example := range s.Examples {
			seen++
			ok, errs := schema_validation.NewSchemaValidator().ValidateSchemaObject(schemas.GetOrZero(name).Schema(), example)
			if !ok {
				t.Errorf("%s example %d: %v", name, i, describe("example", errs))
			}
		}
	}
	if seen < 5 {
		t.Errorf("%d examples checked", seen)
	}
}

// recordedRoutes are the patterns registerREST mounts.
type recordedRoutes []string

func (r *recordedRoutes) Handle(pattern string, _ http.Handler) { *r = append(*r, pattern) }

// TestOpenAPIDocumentListsEveryRoute: the operations the router registers
// under /connect/api/v1 are exactly those of the document.
func TestOpenAPIDocumentListsEveryRoute(t *testing.T) {
	var rec recordedRoutes
	(&Server{}).registerREST(&rec)
	var routed []string
	for _, pattern := range rec {
		method, path, ok := strings.Cut(pattern, " ")
		if !ok {
			continue // the 405 and 404 answers, for every method
		}
		path, found := strings.CutPrefix(path, restPrefix)
		if !found {
			t.Errorf("route %q outside %s", pattern, restPrefix)
		}
		// ServeMux's {$} is the end of the path: /tenants/{$} is /tenants/.
		routed = append(routed, method+" "+strings.TrimSuffix(path, "{$}"))
	}
	var doc struct {
		Servers []struct{ URL string }
		Paths   map[string]map[string]json.RawMessage
	}
	if err := json.Unmarshal(openapi.Document, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Servers) != 1 || doc.Servers[0].URL != restPrefix {
		t.Errorf("servers %+v, want the one %s", doc.Servers, restPrefix)
	}
	var documented []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "options", "head", "patch", "trace":
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}
	slices.Sort(routed)
	slices.Sort(documented)
	for _, r := range routed {
		if !slices.Contains(documented, r) {
			t.Errorf("routed, not in the document: %s", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routed, d) {
			t.Errorf("in the document, not routed: %s", d)
		}
	}
	if len(routed) < 15 {
		t.Errorf("only %d routes recorded: %v", len(routed), routed)
	}
}

const validTenant = `{"data":{"cust_id":"a1","cust_name":"Acme","contact":"","contact_email":"","contact_phone":"",
"address":"","info":"","retention_group":"","mfa_enabled":false,"authentication_method":"system_default",
"sso_config":{"allow_clock_skew":false,"idp_certificate":"","idp_metadata":"","idp_callback_type":"","issuer_url":"",
"sso_config_method":"","sso_entry_point":""},"ingestion_limit":"250","org_id":"","tgrp_name":"","ds_num":0,"user_num":0,"ts_created":"1700000000"}}`

// TestContractCheckCatchesWrongAnswers: the checker reports answers and
// accepted requests the document does not allow, and nothing else.
func TestContractCheckCatchesWrongAnswers(t *testing.T) {
	answer := func(status int, header map[string]string, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // as the handlers read it
			for k, v := range header {
				w.Header().Set(k, v)
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}
	}
	jsonType := map[string]string{"Content-Type": "application/json"}
	apiError := func(code string) string { return `{"error":{"code":"` + code + `","message":"m"}}` }
	for name, tc := range map[string]struct {
		method, path, body string
		handler            http.HandlerFunc
		wantReport         string // "" when the exchange matches
	}{
		"a tenant as documented": {"GET", "/tenants/a1", "", answer(200, jsonType, validTenant), ""},
		"ingestion_limit an integer": {"GET", "/tenants/a1", "", answer(200, jsonType,
			strings.Replace(validTenant, `"250"`, `250`, 1)), "response"},
		"info an object": {"GET", "/tenants/a1", "", answer(200, jsonType,
			strings.Replace(validTenant, `"info":""`, `"info":{"a":1}`, 1)), "response"},
		"an undocumented field": {"GET", "/tenants/a1", "", answer(200, jsonType,
			strings.Replace(validTenant, `"org_id"`, `"colour":"red","org_id"`, 1)), "response"},
		"a field missing": {"GET", "/tenants/a1", "", answer(200, jsonType,
			strings.Replace(validTenant, `"user_num":0,`, ``, 1)), "response"},
		"an undocumented status":          {"GET", "/tenants/a1", "", answer(http.StatusTeapot, jsonType, apiError("internal")), "response"},
		"409 on reading a tenant":         {"GET", "/tenants/a1", "", answer(409, jsonType, apiError("conflict")), "response"},
		"an error code not of its status": {"GET", "/tenants/a1", "", answer(404, jsonType, apiError("forbidden")), "response"},
		"an error body of another shape":  {"GET", "/tenants/a1", "", answer(404, jsonType, `{"message":"gone"}`), "response"},
		"401 without WWW-Authenticate":    {"GET", "/tenants", "", answer(401, jsonType, apiError("unauthenticated")), "response"},
		"401 as documented": {"GET", "/tenants", "", answer(401, map[string]string{"Content-Type": "application/json",
			"WWW-Authenticate": `Basic realm="tifeeds"`}, apiError("unauthenticated")), ""},
		"422 without the field": {"POST", "/tenants", `{"cust_name":""}`, answer(422, jsonType, apiError("invalid_field")), "response"},
		"text instead of JSON":  {"GET", "/tenants", "", answer(200, map[string]string{"Content-Type": "text/plain"}, `{"data":[]}`), "response"},
		"an accepted request the document refuses": {"POST", "/tenants", `{"cust_name":"a","colour":"red"}`,
			answer(201, map[string]string{"Content-Type": "application/json", "Location": "/x"}, validTenant), "accepted request"},
		"an accepted request as documented": {"POST", "/tenants", `{"cust_name":"a","ingestion_limit":5,"info":{"a":1}}`,
			answer(201, map[string]string{"Content-Type": "application/json", "Location": "/x"}, validTenant), ""},
		"405 without Allow": {"PUT", "/tenants/a1", "", answer(405, jsonType, apiError("method_not_allowed")), "Allow"},
		"405 with a wrong Allow": {"PUT", "/tenants/a1", "", answer(405, map[string]string{"Content-Type": "application/json",
			"Allow": "GET, HEAD"}, apiError("method_not_allowed")), "Allow"},
		"405 as documented": {"PUT", "/tenants/a1", "", answer(405, map[string]string{"Content-Type": "application/json",
			"Allow": "DELETE, GET, HEAD, PATCH"}, apiError("method_not_allowed")), ""},
		"200 on an unknown path":           {"GET", "/nothing", "", answer(200, jsonType, `{"data":[]}`), "status 200"},
		"404 of another shape":             {"GET", "/nothing", "", answer(404, jsonType, `not found`), "error body"},
		"404 on an unknown path":           {"GET", "/nothing", "", answer(404, jsonType, apiError("not_found")), ""},
		"HEAD with an undocumented status": {"HEAD", "/tenants", "", answer(409, jsonType, ""), "not documented"},
	} {
		t.Run(name, func(t *testing.T) {
			var reports []string
			checker := mustContractChecker(func(s string) { reports = append(reports, s) })
			req := httptest.NewRequest(tc.method, restPrefix+tc.path, strings.NewReader(tc.body))
			req.SetBasicAuth("admin", "key")
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			checker.wrap(tc.handler).ServeHTTP(httptest.NewRecorder(), req)
			switch {
			case tc.wantReport == "" && len(reports) > 0:
				t.Errorf("reported a matching exchange: %v", reports)
			case tc.wantReport != "" && len(reports) == 0:
				t.Errorf("not reported")
			case tc.wantReport != "" && !strings.Contains(strings.Join(reports, "\n"), tc.wantReport):
				t.Errorf("reported %v, want a mention of %q", reports, tc.wantReport)
			}
		})
	}
}

// TestContractCheckIsInstalled: every server this package's tests build
// has its REST exchanges checked.
func TestContractCheckIsInstalled(t *testing.T) {
	if wrapForTests == nil {
		t.Fatal("wrapForTests is not set")
	}
	srv := httptest.NewServer(New(DefaultConfig(), nil, &graph.Resolver{}, slog.New(slog.DiscardHandler)).Handler())
	defer srv.Close()
	before := contract.checked.Load()
	// The check runs before the handler returns, so before the body's end.
	res, err := http.Get(srv.URL + restPrefix + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || contract.checked.Load() != before+1 {
		t.Errorf("status %d; %d exchanges checked, want %d", res.StatusCode, contract.checked.Load(), before+1)
	}
	// Not the REST API: not checked.
	if res, err = http.Get(srv.URL + "/healthz"); err == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	if contract.checked.Load() != before+1 {
		t.Errorf("a request outside the REST API was checked")
	}
}
