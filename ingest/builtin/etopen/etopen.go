// Package etopen reads the Proofpoint Emerging Threats Open rule set for
// Suricata (the IDS_RULES built-in kind): one Rule indicator per signature
// id, with the rule's text, and the addresses that IP-only rules list in
// their headers.
package etopen

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ioc"
)

// The vendor's URLs. The version in the path is the Suricata release the
// rules are written for; ET publishes one tree per release.
const (
	ArchiveURL  = "https://rules.emergingthreats.net/open/suricata-7.0.3/emerging.rules.tar.gz"
	ChecksumURL = ArchiveURL + ".md5"
)

// List is the Source of every indicator: the archive is one snapshot list.
const List = "et-open"

// Defaults of the caps; see Source.
const (
	// DefaultMaxArchive caps the compressed download. The real archive is
	// about 5 MB; 256 MiB leaves room for growth and ET Pro's larger set.
	DefaultMaxArchive int64 = 256 << 20
	// DefaultMaxEntry caps one file of the archive once decompressed (the
	// largest ET file is a few MB): a gzip bomb stops here.
	DefaultMaxEntry int64 = 128 << 20
	// DefaultMaxTotal caps the decompressed archive as a whole.
	DefaultMaxTotal int64 = 1 << 30
	// MaxRuleLen is the longest rule line kept. ET's longest (IP lists of
	// a few hundred addresses) are under 16 KiB.
	MaxRuleLen = 1 << 20
	// DefaultMaxRetryWait caps how long one Retry-After is waited out.
	DefaultMaxRetryWait = 2 * time.Minute
	// maxRetries is how many answers 429/5xx with Retry-After are waited
	// out in one run before it fails.
	maxRetries = 2
	// maxChecksum is the most of the .md5 answer read: a hex sum and a name.
	maxChecksum = 4 << 10
)

// Source reads ET Open. Every request goes through Client (the server's
// egress policy and feed mirror); the URLs are the vendor's own, fixed.
type Source struct {
	Client *http.Client     // never nil in the server; tests use vendortest.MirrorClient
	Now    func() time.Time // nil: time.Now
	// Test knobs; zero means the default.
	MaxArchive   int64         // compressed bytes (DefaultMaxArchive)
	MaxEntry     int64         // decompressed bytes per archive file (DefaultMaxEntry)
	MaxTotal     int64         // decompressed bytes in all (DefaultMaxTotal)
	MaxRetryWait time.Duration // longest Retry-After waited out (DefaultMaxRetryWait)
}

// Fetch reads the published checksum; when it equals cursor, it returns
// ioc.ErrUnchanged without downloading the archive. Otherwise it streams
// the archive, hands over every live rule of rules/*.rules and the
// addresses of IP-only rules, says the list is complete, and returns the
// checksum as the next cursor. since is unused: the archive is a snapshot.
func (s *Source) Fetch(ctx context.Context, cursor string, since time.Time, sink ioc.Sink) (string, error) {
	sum, err := s.checksum(ctx)
	if err != nil {
		return cursor, err
	}
	if sum == cursor {
		return cursor, ioc.ErrUnchanged
	}
	resp, err := s.get(ctx, ArchiveURL)
	if err != nil {
		return cursor, err
	}
	defer resp.Body.Close()
	maxArchive := orDefault(s.MaxArchive, DefaultMaxArchive)
	if resp.ContentLength > maxArchive {
		return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("etopen: the archive is %d bytes, more than the cap of %d", resp.ContentLength, maxArchive))
	}
	hash := md5.New()
	body := &cappedReader{r: ioc.ProgressReader(sink, resp.Body, resp.ContentLength), left: maxArchive, what: "the archive"}
	r := &ruleReader{sink: sink, maxEntry: orDefault(s.MaxEntry, DefaultMaxEntry), maxTotal: orDefault(s.MaxTotal, DefaultMaxTotal)}
	if err := r.readArchive(ctx, io.TeeReader(body, hash)); err != nil {
		if ctx.Err() != nil {
			return cursor, ctx.Err()
		}
		return cursor, err
	}
	// The rest of the stream (tar padding, gzip trailer) belongs to the sum.
	if _, err := io.Copy(hash, body); err != nil {
		return cursor, r.readErr(err)
	}
	if got := hex.EncodeToString(hash.Sum(nil)); got != sum {
		return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("etopen: the archive's md5 is %s, not the published %s", got, sum))
	}
	ioc.ListComplete(sink, List)
	return sum, nil
}

// checksum reads the published md5 of the archive: 32 hex digits, maybe
// followed by a file name as md5sum writes it.
func (s *Source) checksum(ctx context.Context) (string, error) {
	resp, err := s.get(ctx, ChecksumURL)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxChecksum))
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", ioc.HTTPRequestFailure("etopen", err)
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 || len(fields[0]) != 32 {
		return "", ioc.Fail(ioc.FetchingDataError, errors.New("etopen: the published checksum is not an md5 sum"))
	}
	sum := strings.ToLower(fields[0])
	if _, err := hex.DecodeString(sum); err != nil {
		return "", ioc.Fail(ioc.FetchingDataError, errors.New("etopen: the published checksum is not an md5 sum"))
	}
	return sum, nil
}

// get requests url, waiting out a bounded number of 429 and 5xx answers
// that carry Retry-After; any other answer that is not a success fails.
func (s *Source) get(ctx context.Context, url string) (*http.Response, error) {
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, fmt.Errorf("etopen: %w", err)
		}
		resp, err := client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, ioc.HTTPRequestFailure("etopen", err)
		}
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
			if wait, ok := retryAfter(resp.Header.Get("Retry-After"), s.now()); ok && attempt < maxRetries {
				io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
				resp.Body.Close()
				t := time.NewTimer(min(wait, orDefault(s.MaxRetryWait, DefaultMaxRetryWait)))
				select {
				case <-ctx.Done():
					t.Stop()
					return nil, ctx.Err()
				case <-t.C:
				}
				continue
			}
		}
		if err := ioc.HTTPStatusFailure("etopen", resp); err != nil {
			resp.Body.Close()
			return nil, err
		}
		return resp, nil
	}
}

func (s *Source) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now)), true
	}
	return 0, false
}

func orDefault[T int64 | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// cappedReader fails once more than left bytes are read.
type cappedReader struct {
	r    io.Reader
	left int64
	what string
}

var errCap = errors.New("etopen: over the cap")

func (c *cappedReader) Read(b []byte) (int, error) {
	if c.left <= 0 {
		// One byte more tells a body of exactly the cap from a longer one.
		var one [1]byte
		if n, _ := c.r.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%w: %s is larger than its cap", errCap, c.what)
		}
		return c.r.Read(b)
	}
	if int64(len(b)) > c.left {
		b = b[:c.left]
	}
	n, err := c.r.Read(b)
	c.left -= int64(n)
	return n, err
}

// ruleReader walks the archive and hands its rules to the sink.
type ruleReader struct {
	sink               ioc.Sink
	maxEntry, maxTotal int64
	line               int64 // lines read so far in all files: the position of rejections
}

// readErr classifies an error met while reading the archive's stream.
func (r *ruleReader) readErr(err error) error {
	switch {
	case errors.Is(err, errCap):
		return ioc.Fail(ioc.FetchingDataError, err)
	case errors.Is(err, gzip.ErrHeader), errors.Is(err, gzip.ErrChecksum), errors.Is(err, tar.ErrHeader),
		errors.Is(err, io.ErrUnexpectedEOF):
		return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("etopen: the archive is broken or cut short: %w", err))
	}
	var fe *ioc.FetchError
	if errors.As(err, &fe) {
		return err
	}
	return ioc.HTTPRequestFailure("etopen", err)
}

func (r *ruleReader) readArchive(ctx context.Context, body io.Reader) error {
	zr, err := gzip.NewReader(body)
	if err != nil {
		return r.readErr(err)
	}
	// One member: what follows it is not part of the archive (and the
	// caller still hashes it).
	zr.Multistream(false)
	total := &cappedReader{r: zr, left: r.maxTotal, what: "the decompressed archive"}
	tr := tar.NewReader(total)
	br := bufio.NewReaderSize(nil, 64<<10)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return r.readErr(err)
		}
		if hdr.Typeflag != tar.TypeReg || !isRulesFile(hdr.Name) {
			continue
		}
		if hdr.Size > r.maxEntry {
			return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("etopen: %s is %d bytes, more than the cap of %d", hdr.Name, hdr.Size, r.maxEntry))
		}
		br.Reset(tr)
		if err := r.readRules(ctx, br); err != nil {
			return err
		}
	}
	// Drain the gzip member so that its trailer (length, CRC) is checked.
	if _, err := io.Copy(io.Discard, total); err != nil {
		return r.readErr(err)
	}
	return nil
}

// isRulesFile reports whether name is a rules/*.rules file of the archive.
func isRulesFile(name string) bool {
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	dir, file := path.Split(name)
	return dir == "rules/" && strings.HasSuffix(file, ".rules")
}

// readRules reads one rules file line by line; a rule may continue over
// lines ending in a backslash, as Suricata allows.
func (r *ruleReader) readRules(ctx context.Context, br *bufio.Reader) error {
	var long []byte // a line longer than br's buffer, or continued
	tooLong := false
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if !tooLong {
				if len(long)+len(chunk) > MaxRuleLen {
					tooLong, long = true, nil
				} else {
					long = append(long, chunk...)
				}
			}
			continue
		}
		if err != nil && err != io.EOF {
			return r.readErr(err)
		}
		if len(chunk) == 0 && err == io.EOF && long == nil && !tooLong {
			return nil
		}
		r.line++
		line := chunk
		if long != nil {
			long = append(long, chunk...)
			line = long
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case tooLong:
			r.sink.Rejected(r.line, fmt.Sprintf("skipped: a line longer than %d bytes", MaxRuleLen))
			tooLong, long = false, nil
		case len(line) > 0 && line[len(line)-1] == '\\' && err != io.EOF:
			if len(line) > MaxRuleLen {
				tooLong, long = true, nil
			} else {
				// Keep the text before the backslash; the next line follows.
				long = append(long[:0:0], line[:len(line)-1]...)
			}
			continue
		default:
			long = nil
			if err := r.rule(ctx, line); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// rule hands over the indicators of one line.
func (r *ruleReader) rule(ctx context.Context, line []byte) error {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] == '#' {
		return nil // blank, a comment or a disabled rule: not live
	}
	ru, err := parseRule(string(line))
	if err != nil {
		r.sink.Rejected(r.line, err.Error())
		return nil
	}
	if err := r.sink.Indicator(ctx, ioc.Indicator{
		Kind: ioc.Rule, Value: ioc.RuleValue(ru.sid), Source: List,
		Score: ru.score, Tags: ru.tags, Text: ru.text,
	}); err != nil {
		return err
	}
	if ru.proto != "ip" {
		return nil
	}
	var ipTags []string
	if ru.category != "" {
		ipTags = []string{ru.category}
	}
	for _, side := range [...]string{ru.src, ru.dst} {
		for _, addr := range addresses(side) {
			if strings.Contains(addr, "/") {
				r.sink.Rejected(r.line, fmt.Sprintf("skipped: network %s in rule %d is not a single address", addr, ru.sid))
				continue
			}
			v, err := ioc.Normalize(ioc.IP, addr)
			if err != nil {
				r.sink.Rejected(r.line, fmt.Sprintf("rule %d: %v", ru.sid, err))
				continue
			}
			if err := r.sink.Indicator(ctx, ioc.Indicator{Kind: ioc.IP, Value: v, Source: List, Score: ru.score, Tags: ipTags}); err != nil {
				return err
			}
		}
	}
	return nil
}
