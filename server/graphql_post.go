package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/handler/transport"
)

// answerPOST is gqlgen's POST transport, except that an answer made of data
// alone is written as it is instead of through json.Marshal. gqlgen
// marshals the whole response, which re-validates and compacts the data
// its executor has already written compact: for a 2 MB lookupIocs answer
// that was ~15% of the request. The bytes are the same: json.Marshal's
// HTML escaping is applied in one pass (appendData). Requests asking for
// another media type, and bodies that do not decode, go to gqlgen's own
// transport.
type answerPOST struct {
	transport.POST
}

func (h answerPOST) Do(w http.ResponseWriter, r *http.Request, exec graphql.GraphExecutor) {
	switch r.Header.Get("Accept") {
	case "", "*/*", "application/json":
	default:
		h.POST.Do(w, r, exec)
		return
	}
	start := graphql.Now()
	body, readErr := io.ReadAll(r.Body)
	params := &graphql.RawParams{}
	var decodeErr error
	if readErr == nil {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		decodeErr = dec.Decode(params)
	}
	if readErr != nil || decodeErr != nil {
		// gqlgen answers a body it cannot read or decode; give it the body
		// again, with the read error if there was one.
		var rest io.Reader = bytes.NewReader(body)
		if readErr != nil {
			rest = io.MultiReader(rest, errReader{readErr})
		}
		r.Body = io.NopCloser(rest)
		h.POST.Do(w, r, exec)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	ctx := r.Context()
	params.Headers = r.Header
	params.ReadTime = graphql.TraceTiming{Start: start, End: graphql.Now()}
	rc, opErr := exec.CreateOperationContext(ctx, params)
	if opErr != nil {
		// As gqlgen's statusFor for application/json.
		if errcode.GetErrorKind(opErr) == errcode.KindProtocol {
			w.WriteHeader(http.StatusUnprocessableEntity)
		}
		writeGraphQLResponse(w, exec.DispatchError(graphql.WithOperationContext(ctx, rc), opErr))
		return
	}
	responses, ctx := exec.DispatchOperation(ctx, rc)
	writeGraphQLResponse(w, responses(ctx))
}

// errReader returns err once its reader is drained.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// writeGraphQLResponse writes resp as json.Marshal would, without
// marshalling a response that holds data alone.
func writeGraphQLResponse(w io.Writer, resp *graphql.Response) {
	if resp != nil && len(resp.Errors) == 0 && resp.Label == "" && len(resp.Path) == 0 && resp.HasNext == nil &&
		len(resp.Extensions) == 0 && len(resp.Data) > 0 {
		io.WriteString(w, `{"data":`)
		writeData(w, resp.Data)
		io.WriteString(w, "}")
		return
	}
	b, err := json.Marshal(resp)
	if err != nil {
		// As gqlgen: the executor wrote data that is not JSON, a bug.
		panic(fmt.Errorf("server: unable to marshal a GraphQL response: %w", err))
	}
	w.Write(b)
}

// writeData writes the compact JSON data with json.Marshal's escaping of
// '<', '>', '&', U+2028 and U+2029, straight to w: the answer is not copied
// once more. Outside strings JSON holds none of them, so they are escaped
// wherever they are.
func writeData(w io.Writer, data []byte) {
	const hex = "0123456789abcdef"
	last := 0
	for i := 0; i < len(data); i++ {
		c := data[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			w.Write(data[last:i])
			w.Write([]byte{'\\', 'u', '0', '0', hex[c>>4], hex[c&0xF]})
			last = i + 1
		case c == 0xE2 && i+2 < len(data) && data[i+1] == 0x80 && data[i+2]&^1 == 0xA8:
			// U+2028 or U+2029, which JavaScript reads as line ends.
			w.Write(data[last:i])
			w.Write([]byte{'\\', 'u', '2', '0', '2', hex[data[i+2]-0xA0]})
			i += 2
			last = i + 1
		}
	}
	w.Write(data[last:])
}
