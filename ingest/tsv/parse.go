// Package tsv reads the TSV feed format of the spec: one indicator per line,
// TYPE VALUE SOURCE SCORE separated by tabs. It streams: memory does not grow
// with the file.
package tsv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// Tag is added to every indicator a TSV feed brings in (spec: Fields of the
// IoC record).
const Tag = "emerging_threat"

// MaxLineLen is the longest line Read accepts, in bytes; a longer line is
// rejected (and skipped) without being held in memory.
const MaxLineLen = 64 << 10

// MaxSourceLen is the longest SOURCE name accepted.
const MaxSourceLen = 128

// types maps the TSV TYPE column, case-sensitive, to our kinds.
var types = map[string]ioc.Kind{
	"url":         ioc.URL,
	"ip":          ioc.IP,
	"domain":      ioc.Domain,
	"md5-hash":    ioc.MD5,
	"sha1-hash":   ioc.SHA1,
	"sha256-hash": ioc.SHA256,
}

var bom = []byte("\xef\xbb\xbf")

// Read streams rows from r: TYPE VALUE SOURCE SCORE, tab-separated. Each good
// row becomes an ioc.Indicator (normalised value, Tags [Tag]) handed to
// sink.Indicator; each bad row goes to sink.Rejected with its 1-based line
// number and the reason. Blank lines and lines starting with # are skipped,
// and so is a header row (TYPE VALUE SOURCE SCORE) on the first data line;
// CRLF line ends and a UTF-8 BOM are accepted. Read returns the number of
// lines read. A sink error, a read error or ctx ending aborts the read and
// is returned.
func Read(ctx context.Context, r io.Reader, sink source.Sink) (lines int64, err error) {
	br := bufio.NewReaderSize(r, MaxLineLen)
	tags := []string{Tag}
	seenData := false
	for {
		line, tooLong, err := readLine(br)
		if err == io.EOF && line == nil {
			return lines, nil
		}
		if err != nil && err != io.EOF {
			return lines, fmt.Errorf("tsv: unable to read line %d: %w", lines+1, err)
		}
		lines++
		if lines%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return lines, err
			}
		}
		if tooLong {
			sink.Rejected(lines, fmt.Sprintf("line longer than %d bytes", MaxLineLen))
			continue
		}
		if lines == 1 {
			line = bytes.TrimPrefix(line, bom)
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 || trimmed[0] == '#' {
			continue
		}
		first := !seenData
		seenData = true
		ind, reason := parseRow(line)
		if reason != "" {
			if first && isHeader(line) {
				continue
			}
			sink.Rejected(lines, reason)
			continue
		}
		ind.Tags = tags
		if err := sink.Indicator(ctx, ind); err != nil {
			return lines, err
		}
	}
}

// readLine returns the next line without its '\n'. A line longer than the
// reader's buffer is consumed and reported as tooLong, never held whole.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	line, err = br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = br.ReadSlice('\n')
		}
		if err == io.EOF {
			err = nil
		}
		return []byte{}, true, err
	}
	if err == io.EOF && len(line) == 0 {
		return nil, false, io.EOF
	}
	if err != nil && err != io.EOF {
		return nil, false, err
	}
	return bytes.TrimSuffix(line, []byte{'\n'}), false, nil
}

func isHeader(line []byte) bool {
	f := strings.Split(string(line), "\t")
	return len(f) == 4 && strings.EqualFold(strings.TrimSpace(f[0]), "type") &&
		strings.EqualFold(strings.TrimSpace(f[1]), "value")
}

// parseRow checks one data line and returns the indicator, or the reason it
// is rejected.
func parseRow(line []byte) (ioc.Indicator, string) {
	var f [4][]byte
	n := 0
	for rest := line; ; n++ {
		i := bytes.IndexByte(rest, '\t')
		if n < 4 {
			if i < 0 {
				f[n] = rest
			} else {
				f[n] = rest[:i]
			}
		}
		if i < 0 {
			break
		}
		rest = rest[i+1:]
	}
	n++
	if n != 4 {
		return ioc.Indicator{}, fmt.Sprintf("expected 4 tab-separated fields (TYPE VALUE SOURCE SCORE), got %d", n)
	}
	typ := string(bytes.TrimSpace(f[0]))
	kind, ok := types[typ]
	if !ok {
		return ioc.Indicator{}, fmt.Sprintf("unknown TYPE %q: want url, ip, domain, md5-hash, sha1-hash or sha256-hash (case-sensitive)", clip(typ))
	}
	raw := string(bytes.TrimSpace(f[1]))
	if raw == "" {
		return ioc.Indicator{}, "empty VALUE"
	}
	if kind == ioc.IP {
		// The spec's ip rows hold IPv4 addresses only.
		if a, err := netip.ParseAddr(raw); err != nil || !a.Is4() {
			return ioc.Indicator{}, fmt.Sprintf("VALUE %q is not an IPv4 address", clip(raw))
		}
	}
	value, err := ioc.Normalize(kind, raw)
	if err != nil {
		return ioc.Indicator{}, fmt.Sprintf("VALUE %q is not a valid %s: %s", clip(raw), typ, strings.TrimPrefix(err.Error(), ioc.ErrInvalid.Error()+": "))
	}
	source := bytes.TrimSpace(f[2])
	if reason := checkSource(source); reason != "" {
		return ioc.Indicator{}, reason
	}
	score, reason := parseScore(bytes.TrimSpace(f[3]))
	if reason != "" {
		return ioc.Indicator{}, reason
	}
	return ioc.Indicator{Kind: kind, Value: value, Source: string(source), Score: score}, ""
}

func checkSource(s []byte) string {
	if len(s) == 0 {
		return "empty SOURCE"
	}
	if len(s) > MaxSourceLen {
		return fmt.Sprintf("SOURCE longer than %d characters", MaxSourceLen)
	}
	for _, c := range s {
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return fmt.Sprintf("SOURCE %q may hold only A-Z a-z 0-9 _ -", clip(string(s)))
		}
	}
	return ""
}

func parseScore(s []byte) (int, string) {
	if len(s) == 0 {
		return 0, "empty SCORE"
	}
	bad := fmt.Sprintf("SCORE %q is not an integer from 0 to 100", clip(string(s)))
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, bad
		}
	}
	digits := bytes.TrimLeft(s, "0")
	if len(digits) > 3 {
		return 0, bad
	}
	n := 0
	for _, c := range digits {
		n = n*10 + int(c-'0')
	}
	if n > 100 {
		return 0, bad
	}
	return n, ""
}

// clip shortens a quoted input in a reason, so reasons stay small.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
