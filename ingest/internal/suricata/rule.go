// Package suricata reads Suricata rules as every source that hands over
// Rule IoCs does (the ET Open rule set, TAXII indicators with pattern_type
// suricata): one rule, identified by its sid, its text kept whole. Sources
// of either kind thus store the same rule the same way.
package suricata

import (
	"errors"
	"strconv"
	"strings"
)

// MaxLen is the longest rule text kept. ET's longest (IP lists of a few
// hundred addresses) are under 16 KiB.
const MaxLen = 1 << 20

// Rule is what tifeeds keeps of one Suricata rule.
type Rule struct {
	Text     string
	Proto    string
	Src, Dst string // address parts of the header
	SID      int64
	Score    int
	Category string // "et cnc", from the msg prefix; "" when there is none
	Tags     []string
}

// actions are the first words of a Suricata rule.
var actions = map[string]bool{
	"alert": true, "drop": true, "pass": true, "reject": true,
	"rejectsrc": true, "rejectdst": true, "rejectboth": true,
}

// severityScores are the scores of metadata signature_severity.
var severityScores = map[string]int{"major": 80, "minor": 50, "informational": 20}

// defaultScore is the score of a rule without a known severity.
const defaultScore = 50

// Parse reads a rule line: action, header, options in parentheses. Only
// the header's address parts and the options msg, sid, classtype and
// metadata are read; the text is kept whole. Errors say why the line is
// not a rule tifeeds keeps; callers prefix them as their rejections read.
func Parse(text string) (*Rule, error) {
	open := strings.IndexByte(text, '(')
	if open < 0 || !strings.HasSuffix(text, ")") {
		return nil, errors.New("not a rule (no options in parentheses)")
	}
	header := strings.Fields(text[:open])
	if len(header) != 7 || !actions[header[0]] || (header[4] != "->" && header[4] != "<>" && header[4] != "=>") {
		return nil, errors.New("not a rule (the header is not: action proto source port direction destination port)")
	}
	r := &Rule{Text: text, Proto: strings.ToLower(header[1]), Src: header[2], Dst: header[5], Score: defaultScore}
	var msg, classtype string
	haveSID := false
	err := eachOption(text[open+1:len(text)-1], func(name, value string) error {
		switch name {
		case "msg":
			msg = unquote(value)
		case "sid":
			n, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			if err != nil || n <= 0 {
				return errors.New("the rule's sid is not a positive number")
			}
			r.SID, haveSID = n, true
		case "classtype":
			classtype = strings.ToLower(strings.TrimSpace(value))
		case "metadata":
			for _, kv := range strings.Split(value, ",") {
				k, v, _ := strings.Cut(strings.TrimSpace(kv), " ")
				if k == "signature_severity" {
					if s, ok := severityScores[strings.ToLower(strings.TrimSpace(v))]; ok {
						r.Score = s
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !haveSID {
		return nil, errors.New("the rule has no sid")
	}
	r.Category = category(msg)
	if r.Category != "" {
		r.Tags = append(r.Tags, r.Category)
	}
	if classtype != "" && classtype != r.Category {
		r.Tags = append(r.Tags, classtype)
	}
	return r, nil
}

// eachOption calls fn with each "name:value;" of a rule's options. Inside
// quotes and after a backslash a ';' does not end the option.
func eachOption(opts string, fn func(name, value string) error) error {
	start, quoted := 0, false
	for i := 0; i < len(opts); i++ {
		switch opts[i] {
		case '\\':
			i++
		case '"':
			quoted = !quoted
		case ';':
			if quoted {
				continue
			}
			name, value, _ := strings.Cut(opts[start:i], ":")
			if err := fn(strings.TrimSpace(name), strings.TrimSpace(value)); err != nil {
				return err
			}
			start = i + 1
		}
	}
	if quoted {
		return errors.New("not a rule (a quote is not closed)")
	}
	if strings.TrimSpace(opts[start:]) != "" {
		return errors.New("not a rule (the last option does not end with ';')")
	}
	return nil
}

// unquote returns a quoted option value without its quotes and escapes.
func unquote(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// category is the rule set and category that open an ET msg ("ET CNC
// Feodo ..." gives "et cnc"; "GPL ATTACK_RESPONSE ..." gives
// "gpl attack_response"), lower-case; "" when msg does not start so.
func category(msg string) string {
	f := strings.Fields(msg)
	if len(f) < 2 || !isUpperWord(f[0], false) || !isUpperWord(f[1], true) {
		return ""
	}
	return strings.ToLower(f[0] + " " + f[1])
}

func isUpperWord(w string, underscores bool) bool {
	for i := 0; i < len(w); i++ {
		c := w[i]
		if !(c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' || underscores && i > 0 && c == '_') {
			return false
		}
	}
	return w != ""
}

// Addresses returns the literal addresses and networks of a header's
// address part: "[192.0.2.1,198.51.100.0/24]" or "192.0.2.1". Variables
// ($HOME_NET), any and negated parts (!x, ![...]) give none.
func Addresses(part string) []string {
	var out []string
	var walk func(s string, negated bool)
	walk = func(s string, negated bool) {
		for len(s) > 0 {
			neg := negated
			if s[0] == '!' {
				neg, s = true, s[1:]
			}
			var item string
			if strings.HasPrefix(s, "[") {
				end := closingBracket(s)
				if end < 0 {
					return // unbalanced: read nothing rather than guess
				}
				walk(s[1:end], neg)
				s = s[end+1:]
			} else {
				end := strings.IndexByte(s, ',')
				if end < 0 {
					end = len(s)
				}
				item, s = strings.TrimSpace(s[:end]), s[end:]
				if !neg && item != "" && item != "any" && item[0] != '$' {
					out = append(out, item)
				}
			}
			s = strings.TrimPrefix(strings.TrimSpace(s), ",")
		}
	}
	walk(part, false)
	return out
}

// closingBracket is the index of the ']' that closes s's opening '['.
func closingBracket(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}
