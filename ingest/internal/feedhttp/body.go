package feedhttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// ErrOverCap is what Body's Read returns once the body goes past its cap.
var ErrOverCap = errors.New("feedhttp: the body is over its cap")

// Body reads a download within its cap and remembers why it stopped: the
// first error of the underlying reader (the connection), or the cap.
// Parsers read it as any io.Reader; BodyFailure then tells their error
// apart from the network's.
type Body struct {
	r         io.Reader
	max, read int64
	exceeded  bool
	err       error
}

// NewBody caps resp's body at max bytes (max <= 0: no cap) and reports the
// bytes read to sink (source.ProgressReader), so that the run shows the
// download going.
func NewBody(sink source.Sink, resp *http.Response, max int64) *Body {
	return Cap(source.ProgressReader(sink, resp.Body, resp.ContentLength), max)
}

// Cap reads at most max bytes of r (max <= 0: no cap): a decompressed
// stream, say, whose size the wire's cap does not bound.
func Cap(r io.Reader, max int64) *Body { return &Body{r: r, max: max} }

func (b *Body) Read(p []byte) (int, error) {
	if b.exceeded {
		return 0, ErrOverCap
	}
	if b.max > 0 && b.read >= b.max {
		// At the cap: one byte more means over it.
		var one [1]byte
		n, err := b.r.Read(one[:])
		if n > 0 {
			b.exceeded = true
			return 0, ErrOverCap
		}
		b.note(err)
		return 0, err
	}
	if left := b.max - b.read; b.max > 0 && int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	b.note(err)
	return n, err
}

func (b *Body) note(err error) {
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
}

// Exceeded reports that the body went past its cap.
func (b *Body) Exceeded() bool { return b.exceeded }

// Err is the first error of the underlying reader, io.EOF excepted.
func (b *Body) Err() error { return b.err }

// Max is the cap (0 or less: none).
func (b *Body) Max() int64 { return b.max }

// SinkError carries an error of the sink (the run's limit, the store) out
// of a parser: BodyFailure passes it on as it is, never classified as bad
// data.
type SinkError struct{ Err error }

func (e *SinkError) Error() string { return e.Err.Error() }
func (e *SinkError) Unwrap() error { return e.Err }

// ReadFailure says why reading body stopped when the data is not to
// blame: the run ending, the connection (classified like a transport
// error), or the cap. what names the download in messages (g.Shown(u),
// "the list"). It returns nil when the body read fine, so that the
// caller's error is about the data.
func (g *Getter) ReadFailure(ctx context.Context, what string, body *Body) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("%s: unable to read %s: %w", g.Who, what, ctx.Err())
	case body.Err() != nil:
		return g.requestFailure(fmt.Errorf("reading %s: %w", what, body.Err()))
	case body.Exceeded():
		return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("%s: %s is over its cap of %d bytes", g.Who, what, body.Max()))
	}
	return nil
}

// BodyFailure classifies err, met while parsing body: ReadFailure first;
// then a SinkError passes on unwrapped, an error the parser already
// classified (*ioc.FetchError) as it is, and any other is data that is not
// in the expected format.
func (g *Getter) BodyFailure(ctx context.Context, what string, body *Body, err error) error {
	if f := g.ReadFailure(ctx, what, body); f != nil {
		return f
	}
	var se *SinkError
	var fe *ioc.FetchError
	switch {
	case errors.As(err, &se):
		return se.Err
	case errors.As(err, &fe):
		return err
	}
	return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("%s: %s is not in the expected format: %w", g.Who, what, err))
}
