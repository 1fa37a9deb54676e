package taxii

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// errPattern is the sentinel behind every pattern syntax error.
var errPattern = errors.New("invalid STIX pattern")

// maxPatternDepth bounds the nesting of parentheses and brackets so that a
// hostile pattern cannot exhaust the stack of the recursive descent.
const maxPatternDepth = 64

// maxPatternLen bounds the pattern text we are willing to parse.
const maxPatternLen = 1 << 20

// comparison is one comparison expression of a STIX pattern, such as
// file:hashes.'SHA-256' = '...'. Only what extraction needs is kept.
type comparison struct {
	Object  string   // object type, e.g. "ipv4-addr"
	Path    []string // property path; string components unquoted, list steps as "[0]" or "[*]"
	Op      string   // "=", "!=", "<", "<=", ">", ">=", "IN", "LIKE", "MATCHES", "ISSUBSET", "ISSUPERSET", "EXISTS"
	Negated bool     // NOT before the operator
	Strings []string // the string literal operands (one for "=", several for IN)
}

// parsePattern parses a STIX 2.1 pattern (STIX 2.1 part 9, patterning) and
// returns its comparison expressions in order. Observation operators (AND,
// OR, FOLLOWEDBY) and qualifiers (WITHIN, REPEATS, START/STOP) are checked
// for syntax and otherwise ignored: an indicator's observables are the same
// whatever the temporal logic around them.
func parsePattern(s string) ([]comparison, error) {
	if len(s) > maxPatternLen {
		return nil, fmt.Errorf("%w: longer than %d bytes", errPattern, maxPatternLen)
	}
	toks, err := lexPattern(s)
	if err != nil {
		return nil, err
	}
	p := &patternParser{toks: toks}
	if err := p.observationExpressions(0); err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, p.errorf(t, "unexpected %s", t)
	}
	return p.out, nil
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokLBrack
	tokRBrack
	tokLParen
	tokRParen
	tokColon
	tokDot
	tokComma
	tokAsterisk
	tokOp        // = == != <> < <= > >=
	tokKeyword   // AND OR NOT FOLLOWEDBY LIKE MATCHES ISSUBSET ISSUPERSET EXISTS IN START STOP SECONDS WITHIN REPEATS TIMES LAST
	tokIdent     // identifier, hyphens allowed
	tokString    // '...'
	tokInt       // 12, -3, +4
	tokFloat     // 1.5
	tokBool      // true, false
	tokHex       // h'..'
	tokBinary    // b'..'
	tokTimestamp // t'..'
)

type token struct {
	kind tokKind
	text string // for strings: the unescaped value; keywords upper-case
	pos  int    // byte offset, for messages
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of pattern"
	case tokString:
		return fmt.Sprintf("string %q", t.text)
	default:
		return fmt.Sprintf("%q", t.text)
	}
}

var patternKeywords = map[string]bool{
	"AND": true, "OR": true, "NOT": true, "FOLLOWEDBY": true, "LIKE": true,
	"MATCHES": true, "ISSUBSET": true, "ISSUPERSET": true, "EXISTS": true,
	"IN": true, "START": true, "STOP": true, "SECONDS": true, "WITHIN": true,
	"REPEATS": true, "TIMES": true, "LAST": true,
}

func isIdentStart(c byte) bool {
	return c == '_' || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || isDigit(c) || c == '-' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// lexPattern splits a pattern into tokens following the lexer rules of the
// STIX 2.1 patterning grammar (STIXPattern.g4).
func lexPattern(s string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(s) {
		c := s[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\n':
			i++
			continue
		case strings.HasPrefix(s[i:], "//"):
			for i < len(s) && s[i] != '\n' && s[i] != '\r' {
				i++
			}
			continue
		case strings.HasPrefix(s[i:], "/*"):
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("%w: unterminated comment at %d", errPattern, i)
			}
			i += end + 4
			continue
		case c == '[':
			toks = append(toks, token{tokLBrack, "[", start})
			i++
		case c == ']':
			toks = append(toks, token{tokRBrack, "]", start})
			i++
		case c == '(':
			toks = append(toks, token{tokLParen, "(", start})
			i++
		case c == ')':
			toks = append(toks, token{tokRParen, ")", start})
			i++
		case c == ':':
			toks = append(toks, token{tokColon, ":", start})
			i++
		case c == '.' && !(i+1 < len(s) && isDigit(s[i+1])):
			toks = append(toks, token{tokDot, ".", start})
			i++
		case c == ',':
			toks = append(toks, token{tokComma, ",", start})
			i++
		case c == '*':
			toks = append(toks, token{tokAsterisk, "*", start})
			i++
		case c == '=' || c == '!' || c == '<' || c == '>':
			op, n := string(c), 1
			if i+1 < len(s) {
				switch two := s[i : i+2]; two {
				case "==", "!=", "<>", "<=", ">=":
					op, n = two, 2
				}
			}
			switch op {
			case "!":
				return nil, fmt.Errorf("%w: unexpected '!' at %d", errPattern, i)
			case "==":
				op = "="
			case "<>":
				op = "!="
			}
			i += n
			toks = append(toks, token{tokOp, op, start})
		case c == '\'':
			v, n, err := lexString(s[i:])
			if err != nil {
				return nil, fmt.Errorf("%w at %d", err, i)
			}
			toks = append(toks, token{tokString, v, start})
			i += n
		case (c == 't' || c == 'h' || c == 'b') && i+1 < len(s) && s[i+1] == '\'':
			v, n, err := lexString(s[i+1:])
			if err != nil {
				return nil, fmt.Errorf("%w at %d", err, i)
			}
			kind := map[byte]tokKind{'t': tokTimestamp, 'h': tokHex, 'b': tokBinary}[c]
			if err := checkTypedLiteral(kind, v); err != nil {
				return nil, fmt.Errorf("%w at %d", err, i)
			}
			toks = append(toks, token{kind, v, start})
			i += 1 + n
		case isDigit(c) || c == '-' || c == '+' || c == '.':
			n, kind, err := lexNumber(s[i:])
			if err != nil {
				return nil, fmt.Errorf("%w at %d", err, i)
			}
			toks = append(toks, token{kind, s[i : i+n], start})
			i += n
		case isIdentStart(c):
			for i < len(s) && isIdentPart(s[i]) {
				i++
			}
			word := s[start:i]
			switch {
			case patternKeywords[word]:
				toks = append(toks, token{tokKeyword, word, start})
			case word == "true" || word == "false":
				toks = append(toks, token{tokBool, word, start})
			default:
				toks = append(toks, token{tokIdent, word, start})
			}
		default:
			return nil, fmt.Errorf("%w: unexpected character %q at %d", errPattern, c, i)
		}
	}
	return append(toks, token{tokEOF, "", len(s)}), nil
}

// lexString reads a quoted string literal at the start of s and returns its
// value and the number of bytes consumed. Only \' and \\ are escapes.
func lexString(s string) (string, int, error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\'':
			return b.String(), i + 1, nil
		case '\\':
			if i+1 < len(s) && (s[i+1] == '\'' || s[i+1] == '\\') {
				b.WriteByte(s[i+1])
				i++
				continue
			}
			return "", 0, fmt.Errorf("%w: bad escape in string", errPattern)
		default:
			b.WriteByte(s[i])
		}
	}
	return "", 0, fmt.Errorf("%w: unterminated string", errPattern)
}

func checkTypedLiteral(kind tokKind, v string) error {
	switch kind {
	case tokTimestamp:
		if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
			return fmt.Errorf("%w: bad timestamp %q", errPattern, v)
		}
	case tokHex:
		if len(v)%2 != 0 || strings.Trim(v, "0123456789abcdefABCDEF") != "" {
			return fmt.Errorf("%w: bad hex literal", errPattern)
		}
	case tokBinary:
		if strings.Trim(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") != "" {
			return fmt.Errorf("%w: bad binary literal", errPattern)
		}
	}
	return nil
}

// lexNumber reads an integer or float literal: [+-]? digits, or
// [+-]? digits? '.' digits.
func lexNumber(s string) (int, tokKind, error) {
	i := 0
	if s[0] == '+' || s[0] == '-' {
		i++
	}
	digits := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intDigits := i - digits
	if i < len(s) && s[i] == '.' {
		i++
		frac := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if i == frac {
			return 0, 0, fmt.Errorf("%w: bad number", errPattern)
		}
		return i, tokFloat, nil
	}
	if intDigits == 0 {
		return 0, 0, fmt.Errorf("%w: bad number", errPattern)
	}
	if intDigits > 1 && s[digits] == '0' {
		return 0, 0, fmt.Errorf("%w: leading zero in number", errPattern)
	}
	return i, tokInt, nil
}

type patternParser struct {
	toks []token
	i    int
	out  []comparison
}

func (p *patternParser) peek() token { return p.toks[p.i] }

func (p *patternParser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

func (p *patternParser) isKeyword(word string) bool {
	t := p.peek()
	return t.kind == tokKeyword && t.text == word
}

func (p *patternParser) expect(kind tokKind, what string) (token, error) {
	t := p.next()
	if t.kind != kind {
		return t, p.errorf(t, "expected %s, found %s", what, t)
	}
	return t, nil
}

func (p *patternParser) errorf(t token, format string, args ...any) error {
	return fmt.Errorf("%w: %s at %d", errPattern, fmt.Sprintf(format, args...), t.pos)
}

// observationExpressions parses observation expressions joined by AND, OR
// and FOLLOWEDBY. Precedence does not change what we extract, so the three
// operators are parsed as one left-associative list.
func (p *patternParser) observationExpressions(depth int) error {
	if depth > maxPatternDepth {
		return p.errorf(p.peek(), "nested deeper than %d", maxPatternDepth)
	}
	for {
		if err := p.observationExpression(depth); err != nil {
			return err
		}
		if p.isKeyword("AND") || p.isKeyword("OR") || p.isKeyword("FOLLOWEDBY") {
			p.next()
			continue
		}
		return nil
	}
}

// observationExpression parses '[' comparisons ']' or '(' observations ')',
// each followed by any number of qualifiers.
func (p *patternParser) observationExpression(depth int) error {
	t := p.next()
	switch t.kind {
	case tokLBrack:
		if err := p.comparisonExpression(depth + 1); err != nil {
			return err
		}
		if _, err := p.expect(tokRBrack, "']'"); err != nil {
			return err
		}
	case tokLParen:
		if err := p.observationExpressions(depth + 1); err != nil {
			return err
		}
		if _, err := p.expect(tokRParen, "')'"); err != nil {
			return err
		}
	default:
		return p.errorf(t, "expected '[' or '(', found %s", t)
	}
	return p.qualifiers()
}

// qualifiers parses WITHIN n SECONDS, REPEATS n TIMES and START t STOP t.
func (p *patternParser) qualifiers() error {
	for {
		switch {
		case p.isKeyword("WITHIN"):
			p.next()
			if t := p.next(); (t.kind != tokInt && t.kind != tokFloat) || strings.HasPrefix(t.text, "-") {
				return p.errorf(t, "WITHIN needs a positive number, found %s", t)
			}
			if t := p.next(); t.kind != tokKeyword || t.text != "SECONDS" {
				return p.errorf(t, "expected SECONDS, found %s", t)
			}
		case p.isKeyword("REPEATS"):
			p.next()
			if t := p.next(); t.kind != tokInt || strings.HasPrefix(t.text, "-") {
				return p.errorf(t, "REPEATS needs a positive integer, found %s", t)
			}
			if t := p.next(); t.kind != tokKeyword || t.text != "TIMES" {
				return p.errorf(t, "expected TIMES, found %s", t)
			}
		case p.isKeyword("START"):
			p.next()
			if _, err := p.expect(tokTimestamp, "a timestamp after START"); err != nil {
				return err
			}
			if t := p.next(); t.kind != tokKeyword || t.text != "STOP" {
				return p.errorf(t, "expected STOP, found %s", t)
			}
			if _, err := p.expect(tokTimestamp, "a timestamp after STOP"); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}

// comparisonExpression parses comparisons joined by AND and OR.
func (p *patternParser) comparisonExpression(depth int) error {
	if depth > maxPatternDepth {
		return p.errorf(p.peek(), "nested deeper than %d", maxPatternDepth)
	}
	for {
		if err := p.propTest(depth); err != nil {
			return err
		}
		if p.isKeyword("AND") || p.isKeyword("OR") {
			p.next()
			continue
		}
		return nil
	}
}

// propTest parses one comparison, a parenthesised comparison expression, or
// EXISTS path.
func (p *patternParser) propTest(depth int) error {
	t := p.peek()
	if t.kind == tokLParen {
		p.next()
		if err := p.comparisonExpression(depth + 1); err != nil {
			return err
		}
		_, err := p.expect(tokRParen, "')'")
		return err
	}
	if p.isKeyword("EXISTS") {
		p.next()
		c, err := p.objectPath()
		if err != nil {
			return err
		}
		c.Op = "EXISTS"
		p.out = append(p.out, c)
		return nil
	}
	c, err := p.objectPath()
	if err != nil {
		return err
	}
	if p.isKeyword("NOT") {
		p.next()
		c.Negated = true
	}
	op := p.next()
	switch {
	case op.kind == tokOp:
		c.Op = op.text
		lit := p.next()
		if !isLiteral(lit.kind) {
			return p.errorf(lit, "expected a literal after %s, found %s", op.text, lit)
		}
		if op.text != "=" && op.text != "!=" && lit.kind == tokBool {
			return p.errorf(lit, "%s cannot compare a boolean", op.text)
		}
		if lit.kind == tokString {
			c.Strings = []string{lit.text}
		}
	case op.kind == tokKeyword && op.text == "IN":
		c.Op = "IN"
		if _, err := p.expect(tokLParen, "'(' after IN"); err != nil {
			return err
		}
		if p.peek().kind != tokRParen {
			for {
				lit := p.next()
				if !isLiteral(lit.kind) {
					return p.errorf(lit, "expected a literal in set, found %s", lit)
				}
				if lit.kind == tokString {
					c.Strings = append(c.Strings, lit.text)
				}
				if p.peek().kind != tokComma {
					break
				}
				p.next()
			}
		}
		if _, err := p.expect(tokRParen, "')' closing the set"); err != nil {
			return err
		}
	case op.kind == tokKeyword && (op.text == "LIKE" || op.text == "MATCHES" || op.text == "ISSUBSET" || op.text == "ISSUPERSET"):
		c.Op = op.text
		lit, err := p.expect(tokString, "a string after "+op.text)
		if err != nil {
			return err
		}
		c.Strings = []string{lit.text}
	default:
		return p.errorf(op, "expected a comparison operator, found %s", op)
	}
	p.out = append(p.out, c)
	return nil
}

func isLiteral(k tokKind) bool {
	switch k {
	case tokString, tokInt, tokFloat, tokBool, tokHex, tokBinary, tokTimestamp:
		return true
	}
	return false
}

// objectPath parses object-type ':' first-component path-steps.
func (p *patternParser) objectPath() (comparison, error) {
	var c comparison
	t, err := p.expect(tokIdent, "an object type")
	if err != nil {
		return c, err
	}
	c.Object = t.text
	if _, err := p.expect(tokColon, "':' after the object type"); err != nil {
		return c, err
	}
	first := p.next()
	if first.kind != tokIdent && first.kind != tokString {
		return c, p.errorf(first, "expected a property name, found %s", first)
	}
	c.Path = append(c.Path, first.text)
	for {
		switch p.peek().kind {
		case tokDot:
			p.next()
			step := p.next()
			if step.kind != tokIdent && step.kind != tokString {
				return c, p.errorf(step, "expected a property name after '.', found %s", step)
			}
			c.Path = append(c.Path, step.text)
		case tokLBrack:
			p.next()
			idx := p.next()
			if idx.kind != tokInt && idx.kind != tokAsterisk {
				return c, p.errorf(idx, "expected a list index, found %s", idx)
			}
			if _, err := p.expect(tokRBrack, "']' closing the list index"); err != nil {
				return c, err
			}
			c.Path = append(c.Path, "["+idx.text+"]")
		default:
			return c, nil
		}
	}
}
