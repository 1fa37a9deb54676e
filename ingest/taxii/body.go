package taxii

import (
	"compress/flate"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/tifeeds/tifeeds/ioc"
)

// errValueTooLarge stops the JSON decoder at a value over the size limit.
var errValueTooLarge = errors.New("JSON value too large")

// body is an answer's body as the decoder reads it: decompressed when the
// server sent gzip (asked for or not), with the raw and the decompressed
// bytes each bounded, and the transport's errors told apart from the data's.
type body struct {
	raw     *boundedReader // the bytes on the wire
	out     *boundedReader // the decompressed bytes, which the decoder reads
	gzipped bool
}

// openBody prepares resp's body for reading at most max bytes, before and
// after decompression. Only gzip and identity encodings are accepted: we ask
// for gzip and decompress it ourselves, so that no transport inflates a body
// past our bound before we see it.
func openBody(resp *http.Response, max int64) (*body, error) {
	b := &body{raw: &boundedReader{r: resp.Body, max: max}}
	var r io.Reader = b.raw
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		gz, err := gzip.NewReader(b.raw)
		if err != nil {
			return nil, b.failure(err, fmt.Errorf("taxii: the answer's gzip body is not valid: %w", err))
		}
		r, b.gzipped = gz, true
	default:
		return nil, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("taxii: the answer has an unsupported Content-Encoding %q", enc))
	}
	b.out = &boundedReader{r: r, max: max}
	return b, nil
}

// failure classifies an error met while reading the body: the transport's
// (a connection cut mid-body) as ioc.HTTPRequestFailure says, a body over
// the bound, a corrupt gzip stream or dataErr, what the data did wrong.
func (b *body) failure(err, dataErr error) error {
	var corrupt flate.CorruptInputError
	switch {
	case b.raw.err != nil:
		return ioc.HTTPRequestFailure("taxii", fmt.Errorf("reading the answer's body: %w", b.raw.err))
	case b.raw.exceeded || (b.out != nil && b.out.exceeded):
		return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("taxii: the answer's body is larger than %d bytes%s", b.raw.max, b.decompressedNote()))
	case b.gzipped && b.out != nil && b.out.err != nil:
		// The decoder hides the gzip reader's error in a syntax error.
		return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("taxii: the answer's gzip body is corrupt: %w", b.out.err))
	case errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.As(err, &corrupt):
		return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("taxii: the answer's gzip body is corrupt: %w", err))
	}
	return ioc.Fail(ioc.FetchingDataError, dataErr)
}

func (b *body) decompressedNote() string {
	if b.gzipped {
		return " once decompressed"
	}
	return ""
}

// boundedReader reads at most max bytes, remembering that it cut the body
// and the first error of the reader under it other than io.EOF: the JSON
// decoder would turn a transport error into a syntax error.
type boundedReader struct {
	r         io.Reader
	max, read int64
	exceeded  bool
	err       error
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.read >= b.max {
		// At the limit: only an exhausted body is fine.
		var one [1]byte
		if n, err := b.r.Read(one[:]); n == 0 && err != nil {
			b.note(err)
			return 0, err
		}
		b.exceeded = true
		return 0, io.ErrUnexpectedEOF
	}
	if left := b.max - b.read; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	b.note(err)
	return n, err
}

func (b *boundedReader) note(err error) {
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
}

// valueLimiter stops a json.Decoder that is buffering one value of more
// than max bytes. The decoder holds a whole value in memory before decoding
// it (a string, or an object of the envelope), so without this bound one
// value could take the whole page's size in memory, several times over.
type valueLimiter struct {
	r        io.Reader
	dec      *json.Decoder
	max      int64
	read     int64
	exceeded bool
}

// valueReadChunk keeps each read small, so that the decoder's buffer
// outgrows the bound by no more than this.
const valueReadChunk = 64 << 10

func (v *valueLimiter) Read(p []byte) (int, error) {
	// What was read and not consumed yet is the value being buffered (and
	// at most one chunk after it).
	if v.dec != nil && v.read-v.dec.InputOffset() > v.max {
		v.exceeded = true
		return 0, errValueTooLarge
	}
	if len(p) > valueReadChunk {
		p = p[:valueReadChunk]
	}
	n, err := v.r.Read(p)
	v.read += int64(n)
	return n, err
}
