package tsv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tifeeds/tifeeds/ingest/egress"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// Limits of the spec for TSV sources.
const (
	// MaxFileSize is the bound a TSV file must stay under (100 MB).
	MaxFileSize = 100 << 20
	// RequestTimeout is how long the whole HTTP request, body included, may take.
	RequestTimeout = 30 * time.Second
	// DefaultChunkLines is how many lines are read between checkpoints.
	DefaultChunkLines = 5000
)

// Source fetches a TSV file over HTTP and reads it into a sink. The file is
// downloaded to a temporary file within the limits first, so that a file
// that breaks them applies nothing; it is then read in chunks of lines with
// a checkpoint after each, and never held in memory.
type Source struct {
	// Client sends the request; when nil, a client of the egress policy's
	// defaults (private destinations refused).
	Client *http.Client
	// Timeout bounds the request, body included; RequestTimeout when 0.
	Timeout time.Duration
	// MaxBytes is the size the file must stay under; MaxFileSize when 0.
	MaxBytes int64
	// TempDir holds the downloaded file; os.TempDir() when empty.
	TempDir string
	// ChunkLines is how many lines go between checkpoints; DefaultChunkLines when 0.
	ChunkLines int64
}

// Fetch downloads the file at the feed's URL and reads it into sink, at
// most req.Limit indicators of it, checkpointing where the next run goes on.
func (s *Source) Fetch(ctx context.Context, req source.Request, sink source.Sink) error {
	return source.Walk(s.fetch).Fetch(ctx, req, source.UpToLimit(sink))
}

// fetch downloads the file and hands its rows to sink, starting after the
// line the cursor names ("line:N"; empty for the top). After each chunk of
// lines it calls sink.Checkpoint with the cursor of the next line. req.Limit,
// when above 0, is the most indicators this run may hand over: Fetch then
// stops at the line that uses it up and returns source.ErrLimitReached with the
// cursor to go on from. Having read the whole file it checkpoints and
// returns the empty cursor, so the next run starts a new pass at the top.
// A cursor beyond the end of the file (the file shrank) starts at the top.
func (s *Source) fetch(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
	cursor, limit := req.Cursor, req.Limit
	f, lines, err := s.download(ctx, req.Feed, sink)
	if err != nil {
		return cursor, err
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	done := parseCursor(cursor)
	if done >= lines {
		done = 0
	}
	br := bufio.NewReaderSize(f, 64<<10)
	skipped, got, err := advance(br, done)
	if err == nil && got != done {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("tsv: unable to read the downloaded file: %w", err))
	}
	off := skipped
	chunk := s.ChunkLines
	if chunk <= 0 {
		chunk = DefaultChunkLines
	}
	var handed int64
	for {
		if _, err := br.Peek(1); err == io.EOF {
			break
		}
		n := chunk
		if limit > 0 {
			// A line yields at most one indicator: ending the chunk where the
			// limit may be used up makes the cursor exact.
			rem := limit - handed
			if rem <= 0 {
				return lineCursor(done), source.ErrLimitReached
			}
			n = min(n, rem)
		}
		size, got, err := advance(br, n)
		if err != nil {
			return lineCursor(done), ioc.Fail(ioc.FetchingDataError, fmt.Errorf("tsv: unable to read the downloaded file: %w", err))
		}
		cs := &chunkSink{Sink: sink, base: done}
		if _, err := Read(ctx, io.NewSectionReader(f, off, size), cs); err != nil {
			return lineCursor(done), err
		}
		handed += cs.handed
		off += size
		done += got
		if err := sink.Checkpoint(ctx, lineCursor(done)); err != nil {
			return lineCursor(done), err
		}
	}
	if err := sink.Checkpoint(ctx, ""); err != nil {
		return lineCursor(done), err
	}
	return "", nil
}

// chunkSink numbers a chunk's rejections from the top of the file and
// counts the indicators handed over.
type chunkSink struct {
	source.Sink
	base   int64
	handed int64
}

func (c *chunkSink) Indicator(ctx context.Context, ind ioc.Indicator) error {
	if err := c.Sink.Indicator(ctx, ind); err != nil {
		return err
	}
	c.handed++
	return nil
}

func (c *chunkSink) Rejected(position int64, reason string) {
	c.Sink.Rejected(c.base+position, reason)
}

// advance reads past n lines (fewer at the end of the file) and returns how
// many bytes and lines it read. A line is never held whole.
func advance(br *bufio.Reader, n int64) (size, lines int64, err error) {
	for lines < n {
		b, err := br.ReadSlice('\n')
		size += int64(len(b))
		switch {
		case err == nil:
			lines++
		case errors.Is(err, bufio.ErrBufferFull):
			// The rest of a long line: keep reading it.
		case err == io.EOF:
			if len(b) > 0 {
				lines++
			}
			return size, lines, nil
		default:
			return size, lines, err
		}
	}
	return size, lines, nil
}

func lineCursor(n int64) string { return "line:" + strconv.FormatInt(n, 10) }

func parseCursor(c string) int64 {
	n, err := strconv.ParseInt(strings.TrimPrefix(c, "line:"), 10, 64)
	if err != nil || n < 0 || !strings.HasPrefix(c, "line:") {
		return 0
	}
	return n
}

// ValidateURL checks that u can be a TSV collection URL: absolute http or
// https with a host, without user information (credentials belong in the
// username and password fields, where they are sealed and never shown).
func ValidateURL(u string) error {
	p, err := url.Parse(strings.TrimSpace(u))
	if err != nil {
		return errors.New("is not a URL")
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return errors.New("must be an http or https URL")
	}
	if p.Host == "" {
		return errors.New("has no host")
	}
	if p.User != nil {
		return errors.New("must not carry user information: use the username and password fields")
	}
	return nil
}

// defaultClient is the client of a Source without one.
var defaultClient = sync.OnceValue(func() *http.Client { return egress.NewClient(egress.Options{}) })

// download fetches the file at feed.URL (with feed's username and password,
// if any) into a temporary file and returns it with the
// number of lines it holds. Errors are ioc.FetchErrors with the kind the
// feed's status shows, or ctx's error when ctx ended.
func (s *Source) download(ctx context.Context, feed source.Feed, sink source.Sink) (_ *os.File, lines int64, err error) {
	if err := ValidateURL(feed.URL); err != nil {
		return nil, 0, ioc.Fail(ioc.InvalidURL, fmt.Errorf("tsv: collection URL %w", err))
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = RequestTimeout
	}
	maxBytes := s.MaxBytes
	if maxBytes <= 0 {
		maxBytes = MaxFileSize
	}
	client := s.Client
	if client == nil {
		client = defaultClient()
	}
	reqCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, strings.TrimSpace(feed.URL), nil)
	if err != nil {
		return nil, 0, ioc.Fail(ioc.InvalidURL, fmt.Errorf("tsv: unable to make a request for the collection URL: %w", err))
	}
	if feed.Username != "" || feed.Password != "" {
		req.SetBasicAuth(feed.Username, feed.Password)
	}
	req.Header.Set("Accept", "text/tab-separated-values, text/plain;q=0.9, */*;q=0.5")
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, ctx.Err()
		}
		if reqCtx.Err() != nil {
			err = fmt.Errorf("no answer within %s: %w", timeout, err)
		}
		return nil, 0, ioc.HTTPRequestFailure("tsv", err)
	}
	defer resp.Body.Close()
	if err := ioc.HTTPStatusFailure("tsv", resp); err != nil {
		return nil, 0, err
	}
	tooLarge := ioc.Fail(ioc.FetchingDataError, fmt.Errorf("tsv: the file must be under %s", formatSize(maxBytes)))
	if resp.ContentLength >= maxBytes {
		return nil, 0, tooLarge
	}
	f, err := os.CreateTemp(s.TempDir, "tifeeds-tsv-*.tsv")
	if err != nil {
		return nil, 0, fmt.Errorf("tsv: unable to make a temporary file: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	lc := &lineCounter{w: f}
	n, err := io.Copy(lc, io.LimitReader(source.ProgressReader(sink, resp.Body, resp.ContentLength), maxBytes))
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, 0, ctx.Err()
	case err != nil && reqCtx.Err() != nil:
		return nil, 0, ioc.Fail(ioc.ConnectionError, fmt.Errorf("tsv: the download did not complete within %s", timeout))
	case err != nil:
		var pe *os.PathError
		if errors.As(err, &pe) {
			return nil, 0, fmt.Errorf("tsv: unable to write the temporary file: %w", err)
		}
		return nil, 0, ioc.HTTPRequestFailure("tsv", fmt.Errorf("the download broke off after %d bytes: %w", n, err))
	case n >= maxBytes:
		return nil, 0, tooLarge
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, 0, fmt.Errorf("tsv: unable to rewind the temporary file: %w", err)
	}
	return f, lc.lines(), nil
}

func formatSize(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// lineCounter counts the lines written through it.
type lineCounter struct {
	w    io.Writer
	n    int64
	last byte
	any  bool
}

func (c *lineCounter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(bytes.Count(p[:n], []byte{'\n'}))
	if n > 0 {
		c.last, c.any = p[n-1], true
	}
	return n, err
}

func (c *lineCounter) lines() int64 {
	if c.any && c.last != '\n' {
		return c.n + 1
	}
	return c.n
}

// Category is the custom category of TSV feeds (store.CategoryTSV).
const Category = "TSV"

// DailyLimit is the spec's bound on what a TSV feed ingests per day.
const DailyLimit = 25000

// Options tunes the TSV kind; zero values take the spec's limits.
type Options struct {
	TempDir    string
	MaxBytes   int64
	Timeout    time.Duration
	ChunkLines int64
	DailyLimit int64 // 0: DailyLimit
}

// Kind declares the custom TSV category: a file at the feed's URL, read a
// chunk of lines at a time, at most the daily limit a day.
func Kind(o Options) source.Kind {
	limit := o.DailyLimit
	if limit == 0 {
		limit = DailyLimit
	}
	return source.Kind{
		Key: Category,
		New: func(e source.Env) source.Source {
			return &Source{Client: e.Client, TempDir: o.TempDir, MaxBytes: o.MaxBytes, Timeout: o.Timeout, ChunkLines: o.ChunkLines}
		},
		Validate: func(_ context.Context, _ source.Env, feed source.Feed) error {
			if err := ValidateURL(feed.URL); err != nil {
				return &source.Invalid{Field: "collectionUrl", Err: err}
			}
			return nil
		},
		DailyLimit: limit,
	}
}
