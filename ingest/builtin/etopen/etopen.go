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
	"path"
	"strings"
	"time"

	"github.com/tifeeds/tifeeds/ingest/builtin"
	"github.com/tifeeds/tifeeds/ingest/internal/feedhttp"
	"github.com/tifeeds/tifeeds/ingest/internal/suricata"
	"github.com/tifeeds/tifeeds/ingest/source"
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
	// MaxRuleLen is the longest rule line kept: the same bound for every
	// source of rules.
	MaxRuleLen = suricata.MaxLen
	// DefaultMaxRetries is how many times a 429 or 5xx is repeated in one
	// request before the run fails.
	DefaultMaxRetries = 2
	// DefaultMaxRetryWait is the longest Retry-After waited out; a longer
	// one fails the run at once, the next poll tries again.
	DefaultMaxRetryWait = feedhttp.DefaultMaxRetryWait
	// maxChecksum is the most of the .md5 answer read: a hex sum and a name.
	maxChecksum = 4 << 10
)

// Source reads ET Open. Every request goes through Client (the server's
// egress policy and feed mirror); the URLs are the vendor's own, fixed.
type Source struct {
	feedhttp.Settings
	// Test knobs; zero means the default.
	MaxArchive int64 // compressed bytes (DefaultMaxArchive)
	MaxEntry   int64 // decompressed bytes per archive file (DefaultMaxEntry)
	MaxTotal   int64 // decompressed bytes in all (DefaultMaxTotal)
}

// Fetch reads the rule archive unless its checksum is the request's cursor.
func (s *Source) Fetch(ctx context.Context, req source.Request, sink source.Sink) error {
	return source.Walk(s.fetch).Fetch(ctx, req, sink)
}

// fetch reads the published checksum; when it equals cursor, it returns
// ioc.ErrUnchanged without downloading the archive. Otherwise it streams
// the archive, hands over every live rule of rules/*.rules and the
// addresses of IP-only rules, says the list is complete, and returns the
// checksum as the next cursor. since is unused: the archive is a snapshot.
func (s *Source) fetch(ctx context.Context, req source.Request, sink source.Sink) (string, error) {
	cursor := req.Cursor
	g := &feedhttp.Getter{Who: "etopen",
		Settings: s.Settings.Or(feedhttp.Settings{MaxRetries: DefaultMaxRetries, MaxRetryWait: DefaultMaxRetryWait})}
	sum, err := checksum(ctx, g)
	if err != nil {
		return cursor, err
	}
	if sum == cursor {
		return cursor, ioc.ErrUnchanged
	}
	resp, err := g.Get(ctx, ArchiveURL, feedhttp.Validators{})
	if err != nil {
		return cursor, err
	}
	defer feedhttp.Close(resp)
	maxArchive := feedhttp.Or(s.MaxArchive, DefaultMaxArchive)
	if resp.ContentLength > maxArchive {
		return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("etopen: the archive is %d bytes, more than the cap of %d", resp.ContentLength, maxArchive))
	}
	hash := md5.New()
	wire := feedhttp.NewBody(sink, resp, maxArchive)
	r := &ruleReader{sink: sink, maxEntry: feedhttp.Or(s.MaxEntry, DefaultMaxEntry), maxTotal: feedhttp.Or(s.MaxTotal, DefaultMaxTotal)}
	err = r.readArchive(ctx, io.TeeReader(wire, hash))
	if err == nil {
		// The rest of the stream (tar padding, gzip trailer) belongs to the sum.
		_, err = io.Copy(hash, wire)
	}
	if err != nil {
		return cursor, archiveFailure(ctx, g, wire, r.total, err)
	}
	if got := hex.EncodeToString(hash.Sum(nil)); got != sum {
		return cursor, ioc.Fail(ioc.FetchingDataError, fmt.Errorf("etopen: the archive's md5 is %s, not the published %s", got, sum))
	}
	sink.ListComplete(List, time.Time{})
	return sum, nil
}

// archiveFailure tells why reading the archive failed: the run ending, the
// connection (a download cut mid-way is a Connection Error) or the wire's
// cap, then the decompressed cap, and then as feedhttp.BodyFailure does:
// the sink, an error already classified (a file over its cap), or a broken
// archive (bad gzip or tar, a short file): bad data.
func archiveFailure(ctx context.Context, g *feedhttp.Getter, wire, total *feedhttp.Body, err error) error {
	if f := g.ReadFailure(ctx, "the archive", wire); f != nil {
		return f
	}
	if total != nil && total.Exceeded() {
		return ioc.Fail(ioc.FetchingDataError, fmt.Errorf("etopen: the decompressed archive is over its cap of %d bytes", total.Max()))
	}
	return g.BodyFailure(ctx, "the archive", wire, err)
}

// checksum reads the published md5 of the archive: 32 hex digits, maybe
// followed by a file name as md5sum writes it.
func checksum(ctx context.Context, g *feedhttp.Getter) (string, error) {
	resp, err := g.Get(ctx, ChecksumURL, feedhttp.Validators{})
	if err != nil {
		return "", err
	}
	defer feedhttp.Close(resp)
	// A longer answer (an HTML page) is cut, and then is no sum.
	body := feedhttp.Cap(io.LimitReader(resp.Body, maxChecksum), 0)
	b, err := io.ReadAll(body)
	if err != nil {
		return "", g.BodyFailure(ctx, "the checksum", body, err)
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

// ruleReader walks the archive and hands its rules to the sink. Errors of
// the sink come back as feedhttp.SinkError; errors of the stream as they
// are, for archiveFailure to classify.
type ruleReader struct {
	sink               source.Sink
	maxEntry, maxTotal int64
	total              *feedhttp.Body // the decompressed stream, once opened
	line               int64          // lines read so far in all files: the position of rejections
}

func (r *ruleReader) readArchive(ctx context.Context, body io.Reader) error {
	zr, err := gzip.NewReader(body)
	if err != nil {
		return err
	}
	// One member: what follows it is not part of the archive (and the
	// caller still hashes it).
	zr.Multistream(false)
	r.total = feedhttp.Cap(zr, r.maxTotal)
	tr := tar.NewReader(r.total)
	br := bufio.NewReaderSize(nil, 64<<10)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
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
	_, err = io.Copy(io.Discard, r.total)
	return err
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
			return err
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
	ru, err := suricata.Parse(string(line))
	if err != nil {
		r.sink.Rejected(r.line, "skipped: "+err.Error())
		return nil
	}
	if err := r.sink.Indicator(ctx, ioc.Indicator{
		Kind: ioc.Rule, Value: ioc.RuleValue(ru.SID), Source: List,
		Score: ru.Score, Tags: ru.Tags, Text: ru.Text,
	}); err != nil {
		return &feedhttp.SinkError{Err: err}
	}
	if ru.Proto != "ip" {
		return nil
	}
	var ipTags []string
	if ru.Category != "" {
		ipTags = []string{ru.Category}
	}
	for _, side := range [...]string{ru.Src, ru.Dst} {
		for _, addr := range suricata.Addresses(side) {
			if strings.Contains(addr, "/") {
				r.sink.Rejected(r.line, fmt.Sprintf("skipped: network %s in rule %d is not a single address", addr, ru.SID))
				continue
			}
			v, err := ioc.Normalize(ioc.IP, addr)
			if err != nil {
				r.sink.Rejected(r.line, fmt.Sprintf("rule %d: %v", ru.SID, err))
				continue
			}
			if err := r.sink.Indicator(ctx, ioc.Indicator{Kind: ioc.IP, Value: v, Source: List, Score: ru.Score, Tags: ipTags}); err != nil {
				return &feedhttp.SinkError{Err: err}
			}
		}
	}
	return nil
}

// Kind declares the IDSRules kind.
func Kind() source.Kind {
	return feedhttp.VendorKind(string(builtin.IDSRules), func(s feedhttp.Settings) source.Source { return &Source{Settings: s} })
}
