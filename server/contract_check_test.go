package server

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/tifeeds/tifeeds/server/openapi"
)

// contract checks every REST exchange of every server this package's tests
// build (wrapForTests) against the OpenAPI document; TestMain fails the run
// when one did not match, so the document cannot drift from the code.
var contract = mustContractChecker(contractViolations.add)

func init() { wrapForTests = contract.wrap }

func TestMain(m *testing.M) {
	code := m.Run()
	if v := contractViolations.list(); len(v) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d REST exchanges do not match server/openapi/openapi.json:\n", len(v))
		for _, s := range v {
			fmt.Fprintln(os.Stderr, "  -", s)
		}
		code = 1
	}
	os.Exit(code)
}

// violations collects what the checker reports, for TestMain.
type violations struct {
	mu   sync.Mutex
	seen []string
}

var contractViolations violations

func (v *violations) add(s string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.seen = append(v.seen, s)
}

func (v *violations) list() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.seen)
}

type contractChecker struct {
	model     *v3.Document
	errSchema *base.Schema
	report    func(string)
	checked   atomic.Int64 // REST exchanges checked, to show the hook is live

	mu        sync.Mutex // the validator's caches are not documented as safe for concurrent use
	validator validator.Validator
	schemas   schema_validation.SchemaValidator
}

func newContractChecker(report func(string)) (*contractChecker, error) {
	doc, err := libopenapi.NewDocument(openapi.Document)
	if err != nil {
		return nil, err
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, err
	}
	errSchema := m.Model.Components.Schemas.GetOrZero("Error")
	if errSchema == nil {
		return nil, fmt.Errorf("the document has no Error schema")
	}
	return &contractChecker{
		model: &m.Model, errSchema: errSchema.Schema(), report: report,
		validator: validator.NewValidatorFromV3Model(&m.Model),
		schemas:   schema_validation.NewSchemaValidator(),
	}, nil
}

func mustContractChecker(report func(string)) *contractChecker {
	c, err := newContractChecker(report)
	if err != nil {
		panic("server/openapi/openapi.json: " + err.Error())
	}
	return c
}

// wrap passes every request on as it is and checks, afterwards, the REST
// ones and their answers.
func (c *contractChecker) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, restPrefix+"/") {
			next.ServeHTTP(w, r)
			return
		}
		// The body as the handler read it; what it did not read does not
		// matter to the answer.
		var reqBody bytes.Buffer
		if r.Body != nil {
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.TeeReader(r.Body, &reqBody), r.Body}
		}
		rec := &capture{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		res := &http.Response{StatusCode: rec.status, Header: w.Header().Clone(),
			Body: io.NopCloser(bytes.NewReader(rec.body.Bytes())), Request: r}
		for _, problem := range c.check(r, reqBody.Bytes(), res, rec.body.Bytes()) {
			c.report(fmt.Sprintf("%s %s -> %d %s: %s", r.Method, r.URL.RequestURI(), rec.status,
				truncate(rec.body.String(), 300), problem))
		}
		c.checked.Add(1)
	})
}

// check returns how an exchange departs from the document, if it does.
func (c *contractChecker) check(r *http.Request, reqBody []byte, res *http.Response, resBody []byte) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	req := r.Clone(r.Context())
	head := req.Method == http.MethodHead
	if head {
		// HEAD is served by the GET routes: same statuses, no body.
		req.Method = http.MethodGet
	}
	req.Body = io.NopCloser(bytes.NewReader(reqBody))
	pathItem, template := c.findPath(strings.TrimPrefix(req.URL.Path, restPrefix))
	switch {
	case pathItem == nil:
		// A path the API does not have: 404 from the catch-all, or an
		// answer of the middleware in front of every route.
		return c.checkOutsideOperations(res, resBody, http.StatusNotFound, "")
	case pathItem.GetOperations().GetOrZero(strings.ToLower(req.Method)) == nil:
		return c.checkOutsideOperations(res, resBody, http.StatusMethodNotAllowed, allowOf(pathItem))
	case head:
		if pathItem.Get.Responses.Codes.GetOrZero(fmt.Sprint(res.StatusCode)) == nil {
			return []string{fmt.Sprintf("status %d is not documented for GET", res.StatusCode)}
		}
		return nil
	}
	var problems []string
	if ok, errs := c.validator.GetResponseBodyValidator().ValidateResponseBodyWithPathItem(req, res, pathItem, template); !ok {
		problems = append(problems, describe("response", errs)...)
	}
	// An accepted request must be one the document allows, or the
	// document refuses requests the server takes.
	if res.StatusCode < 300 {
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
		if ok, errs := c.validator.ValidateHttpRequestSyncWithPathItem(req, pathItem, template); !ok {
			problems = append(problems, describe("accepted request", errs)...)
		}
	}
	return problems
}

// findPath is the document's path of a request path, matched as ServeMux
// matches: a {name} segment is one non-empty segment, and a literal path
// wins over a template. (The validator's own matcher lets {id} match the
// empty segment of /tenants/, which the router does not.)
func (c *contractChecker) findPath(path string) (*v3.PathItem, string) {
	segments := strings.Split(path, "/")
	var found *v3.PathItem
	var foundTemplate string
	for template, item := range c.model.Paths.PathItems.FromOldest() {
		want := strings.Split(template, "/")
		if len(want) != len(segments) {
			continue
		}
		literal, match := true, true
		for i, w := range want {
			switch {
			case strings.HasPrefix(w, "{") && strings.HasSuffix(w, "}"):
				literal = false
				match = match && segments[i] != ""
			default:
				match = match && w == segments[i]
			}
		}
		if match && (found == nil || literal) {
			found, foundTemplate = item, template
		}
	}
	return found, foundTemplate
}

// middlewareStatuses are the answers the middleware in front of every route
// may give on any path, before routing: a query string with a bad string,
// a cross-site write, a body over the limit.
var middlewareStatuses = []int{http.StatusBadRequest, http.StatusForbidden, http.StatusRequestEntityTooLarge}

// checkOutsideOperations checks an answer outside any documented operation:
// the info section says it is a JSON Error, with want's status (and allow
// as Allow for 405) unless the middleware answered first.
func (c *contractChecker) checkOutsideOperations(res *http.Response, body []byte, want int, allow string) []string {
	var problems []string
	switch {
	case res.StatusCode == want:
		if allow != "" && res.Header.Get("Allow") != allow {
			problems = append(problems, fmt.Sprintf("Allow is %q, the document has %q", res.Header.Get("Allow"), allow))
		}
	case slices.Contains(middlewareStatuses, res.StatusCode):
	default:
		problems = append(problems, fmt.Sprintf("status %d outside the documented operations, want %d", res.StatusCode, want))
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		problems = append(problems, "Content-Type "+ct+", want application/json")
	}
	if ok, errs := c.schemas.ValidateSchemaBytes(c.errSchema, body); !ok {
		problems = append(problems, describe("error body", errs)...)
	}
	return problems
}

// allowOf is the Allow header the document implies for a path.
func allowOf(item *v3.PathItem) string {
	var methods []string
	for m := range item.GetOperations().KeysFromOldest() {
		methods = append(methods, strings.ToUpper(m))
		if strings.EqualFold(m, http.MethodGet) {
			methods = append(methods, http.MethodHead)
		}
	}
	slices.Sort(methods)
	return strings.Join(methods, ", ")
}

func describe(what string, errs []*liberrors.ValidationError) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, what+": "+fmt.Sprint(e))
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// capture copies the answer while it goes to the client.
type capture struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *capture) WriteHeader(code int) {
	if c.status == 0 {
		c.status = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *capture) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.body.Write(b)
	return c.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (write deadlines).
func (c *capture) Unwrap() http.ResponseWriter { return c.ResponseWriter }
