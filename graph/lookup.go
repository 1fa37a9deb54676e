package graph

import (
	"bytes"
	"context"
	"io"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/handler"

	"github.com/tifeeds/tifeeds/auth"
	"github.com/tifeeds/tifeeds/graph/model"
	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/store"
)

// noWarnings is the warnings of a value no list matches, shared.
var noWarnings = []*model.IocWarning{}

// MaxLookupValues bounds one bulk lookup.
const MaxLookupValues = 10000

// lookupIocs reads each raw value the way ingestion does (ioc.Detect), then
// asks the store for all of them at once. The answer keeps the input's
// order, one entry per value, duplicates included. The allowlist is matched
// only withAllowlist: the bulk-lookup writer, which never writes
// allowlisted, would pay for a match per value.
func (r *Resolver) lookupIocs(ctx context.Context, values []string, withAllowlist bool) ([]*model.IocLookup, error) {
	if _, err := auth.UserFrom(ctx); err != nil {
		return nil, err
	}
	if len(values) > MaxLookupValues {
		return nil, store.Invalid("values", "at most %d values per lookup, got %d", MaxLookupValues, len(values))
	}
	out := make([]*model.IocLookup, len(values))
	keys := make([]store.IoCKey, 0, len(values))
	// One allocation each for the answers and the kinds and values they
	// point to, rather than three per value.
	answers := make([]model.IocLookup, len(values))
	kinds := make([]ioc.Kind, len(values))
	normalised := make([]string, len(values))
	for i, raw := range values {
		res := &answers[i]
		res.Input, res.Warnings = raw, noWarnings
		out[i] = res
		kind, value, err := ioc.Detect(raw)
		if err != nil {
			msg := err.Error()
			res.Error = &msg
			continue
		}
		kinds[i], normalised[i] = kind, value
		res.Type, res.Value = &kinds[i], &normalised[i]
		if withAllowlist {
			res.Allowlisted = r.allowlistMatchModel(kind, value)
			res.Warnings = warningModels(r.WarninglistSet().Matches(kind, value))
		}
		keys = append(keys, store.IoCKey{Type: kind, Value: value})
	}
	found, err := r.Store.IoCsByKeys(ctx, keys)
	if err != nil {
		return nil, err
	}
	for _, res := range out {
		if res.Value == nil {
			continue
		}
		if hit, ok := found[store.IoCKey{Type: *res.Type, Value: *res.Value}]; ok {
			res.Known, res.Ioc = true, hit
		}
	}
	return out, nil
}

// UseFastLookups installs the bulk-lookup answer writer on a GraphQL handler.
//
// gqlgen marshals a list of objects with a goroutine per element and every
// field through its generic resolver path (a field context, CollectFields
// per element): for 10,000 lookups that was ~70% of the request, several
// times the database's join. lookupIocs is the one field that answers
// thousands of objects whose fields are all plain data, so as a root field
// it is resolved and written here in one pass, for the selections collected
// once. Anything this writer does not handle (a field with its own resolver
// such as sources or text, an error, an argument it cannot read) goes
// through gqlgen's generated path unchanged, so the answer and its errors
// stay those of the schema.
func UseFastLookups(srv *handler.Server, r *Resolver) {
	srv.AroundRootFields(func(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
		rf := graphql.GetRootFieldContext(ctx)
		// gqlgen names the field, not its type, in RootFieldContext.Object.
		if rf == nil || rf.Field.Field == nil || rf.Field.ObjectDefinition == nil ||
			rf.Field.ObjectDefinition.Name != "Query" || rf.Field.Name != "lookupIocs" {
			return next(ctx)
		}
		if m, ok := r.fastLookup(ctx, rf.Field); ok {
			return m
		}
		return next(ctx)
	})
}

// lookupFields is a collected IocLookup selection: the fields in answer
// order, with the Ioc sub-selection collected once for every element.
type lookupFields struct {
	fields []graphql.CollectedField
	keys   [][]byte             // each field's `"alias":`, quoted once
	ioc    map[string]iocFields // alias of an ioc field -> its fields
}

// iocFields is a collected Ioc selection with each field's `"alias":`.
type iocFields struct {
	fields []graphql.CollectedField
	keys   [][]byte
}

// objectKeys quotes each field's alias once for every element written.
func objectKeys(fields []graphql.CollectedField) [][]byte {
	keys := make([][]byte, len(fields))
	for i, f := range fields {
		var b bytes.Buffer
		graphql.MarshalString(f.Alias).MarshalGQL(&b)
		b.WriteByte(':')
		keys[i] = b.Bytes()
	}
	return keys
}

// fastLookupFields lists the fields fastLookup writes.
var (
	fastLookupFields = map[string]bool{"__typename": true, "input": true, "type": true, "value": true, "known": true, "error": true, "ioc": true}
	fastIocFields    = map[string]bool{"__typename": true, "id": true, "type": true, "value": true, "score": true, "tags": true, "firstSeen": true, "lastSeen": true, "expirationDate": true}
)

func (r *Resolver) fastLookup(ctx context.Context, field graphql.CollectedField) (graphql.Marshaler, bool) {
	op := graphql.GetOperationContext(ctx)
	values, ok := lookupValues(field.ArgumentMap(op.Variables)["values"])
	if !ok {
		return nil, false
	}
	sel := lookupFields{fields: graphql.CollectFields(op, field.Selections, []string{"IocLookup"}), ioc: map[string]iocFields{}}
	sel.keys = objectKeys(sel.fields)
	for _, f := range sel.fields {
		if !fastLookupFields[f.Name] {
			return nil, false
		}
		if f.Name == "ioc" {
			sub := graphql.CollectFields(op, f.Selections, []string{"Ioc"})
			for _, g := range sub {
				if !fastIocFields[g.Name] {
					return nil, false
				}
			}
			sel.ioc[f.Alias] = iocFields{fields: sub, keys: objectKeys(sub)}
		}
	}
	res, err := r.lookupIocs(ctx, values, false)
	if err != nil {
		// The generated path reports the error as the schema does.
		return nil, false
	}
	budget := answerBudgetFrom(ctx)
	spent := 0
	buf := answerBuffer()
	buf.WriteByte('[')
	for i, l := range res {
		if i > 0 {
			buf.WriteByte(',')
		}
		if !sel.write(buf, l) {
			releaseAnswerBuffer(buf)
			return nil, false
		}
		if budget != nil && (i+1)%lookupSample == 0 {
			// Spent as written, in steps, so that aliased lookups written
			// at once stop together near the answer's limit. The answer is
			// replaced by the limit's refusal; this field's value is moot.
			if !budget.spend(buf.Len() - spent) {
				releaseAnswerBuffer(buf)
				return graphql.Null, true
			}
			spent = buf.Len()
		}
		if i == lookupSample-1 {
			// Size the answer from its first elements: a guess from the
			// selection alone was twice the 2 MB of 10,000 values, and
			// touching the memory (page faults, clearing) cost more than
			// writing into it.
			// No more than the answer may still take, though.
			grow := buf.Len() / lookupSample * (len(res) - lookupSample) * 9 / 8
			if budget != nil {
				grow = min(grow, int(max(budget.left.Load(), 0)))
			}
			buf.Grow(grow)
		}
	}
	buf.WriteByte(']')
	if budget != nil && !budget.spend(buf.Len()-spent) {
		releaseAnswerBuffer(buf)
		return graphql.Null, true
	}
	return &FastLookupAnswer{buf: buf}, true
}

// lookupSample is how many elements of a lookup answer are written before
// the rest is sized from them.
const lookupSample = 64

// FastLookupAnswer is a lookupIocs answer written by UseFastLookups: the
// field's JSON value, in a buffer given back once written.
type FastLookupAnswer struct{ buf *bytes.Buffer }

// MarshalGQL writes the answer, once: gqlgen marshals a response once.
func (a *FastLookupAnswer) MarshalGQL(w io.Writer) {
	if a.buf == nil {
		panic("graph: a bulk-lookup answer written twice")
	}
	w.Write(a.buf.Bytes())
	releaseAnswerBuffer(a.buf)
	a.buf = nil
}

// answerBuffers keeps a few buffers of bulk-lookup answers between
// requests: a fresh 2 MB buffer per 10,000 values, cleared by the runtime
// and grown while written, cost a tenth of the request (docs/benchmarks.md).
// Not a sync.Pool: every collection empties one, and 2 MB of garbage per
// request makes collections frequent.
var answerBuffers = make(chan *bytes.Buffer, 2)

// maxPooledAnswer bounds what an idle kept buffer holds on to: larger
// answers (long values) leave theirs to the collector.
const maxPooledAnswer = 8 << 20

func answerBuffer() *bytes.Buffer {
	select {
	case buf := <-answerBuffers:
		buf.Reset()
		return buf
	default:
		return new(bytes.Buffer)
	}
}

func releaseAnswerBuffer(buf *bytes.Buffer) {
	if buf.Cap() > maxPooledAnswer {
		return
	}
	select {
	case answerBuffers <- buf:
	default:
	}
}

// lookupValues reads the values argument as coerced by gqlgen: a list of
// strings, or one string (input coercion of a single value to a list).
func lookupValues(v any) ([]string, bool) {
	switch v := v.(type) {
	case string:
		return []string{v}, true
	case []string:
		return v, true
	case []any:
		out := make([]string, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, false
			}
			out[i] = s
		}
		return out, true
	}
	return nil, false
}

// write appends one IocLookup as gqlgen would: every key and value through
// gqlgen's own marshalers (graphql.Marshal*, model.MarshalInt64ID), only the
// braces and commas between them here. gqlgen's FieldSet would write those
// too, but its per-object map and iterator cost 6 times the writing
// (docs/decisions.md, issue 25). It reports false for a value the schema
// would refuse (a null where it allows none), which the generated path then
// reports.
func (s lookupFields) write(buf *bytes.Buffer, l *model.IocLookup) bool {
	buf.WriteByte('{')
	for i, f := range s.fields {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(s.keys[i])
		switch f.Name {
		case "__typename":
			graphql.MarshalString("IocLookup").MarshalGQL(buf)
		case "input":
			graphql.MarshalString(l.Input).MarshalGQL(buf)
		case "type":
			if l.Type == nil {
				buf.WriteString("null")
			} else if !writeKind(buf, *l.Type) {
				return false
			}
		case "value":
			writeOptString(buf, l.Value)
		case "known":
			graphql.MarshalBoolean(l.Known).MarshalGQL(buf)
		case "error":
			writeOptString(buf, l.Error)
		case "ioc":
			if l.Ioc == nil {
				buf.WriteString("null")
			} else if !writeIoC(buf, s.ioc[f.Alias], l.Ioc) {
				return false
			}
		default:
			return false
		}
	}
	buf.WriteByte('}')
	return true
}

func writeIoC(buf *bytes.Buffer, sel iocFields, c *store.IoC) bool {
	buf.WriteByte('{')
	for i, f := range sel.fields {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(sel.keys[i])
		var t time.Time
		switch f.Name {
		case "__typename":
			graphql.MarshalString("Ioc").MarshalGQL(buf)
			continue
		case "id":
			model.MarshalInt64ID(c.ID).MarshalGQL(buf)
			continue
		case "type":
			if !writeKind(buf, c.Type) {
				return false
			}
			continue
		case "value":
			graphql.MarshalString(c.Value).MarshalGQL(buf)
			continue
		case "score":
			graphql.MarshalInt(c.Score).MarshalGQL(buf)
			continue
		case "tags":
			if c.Tags == nil {
				return false
			}
			buf.WriteByte('[')
			for j, tag := range c.Tags {
				if j > 0 {
					buf.WriteByte(',')
				}
				graphql.MarshalString(tag).MarshalGQL(buf)
			}
			buf.WriteByte(']')
			continue
		case "firstSeen":
			t = c.FirstSeen
		case "lastSeen":
			t = c.LastSeen
		case "expirationDate":
			t = c.ExpiresAt
		default:
			return false
		}
		if !writeTime(buf, t) {
			return false
		}
	}
	buf.WriteByte('}')
	return true
}

func writeKind(buf *bytes.Buffer, k ioc.Kind) bool {
	name, ok := marshalNIocType2githubᚗcomᚋtifeedsᚋtifeedsᚋiocᚐKind[k]
	if !ok {
		return false
	}
	graphql.MarshalString(name).MarshalGQL(buf)
	return true
}

func writeOptString(buf *bytes.Buffer, s *string) {
	if s == nil {
		buf.WriteString("null")
		return
	}
	graphql.MarshalString(*s).MarshalGQL(buf)
}

// writeTime writes t with graphql.MarshalTime, the Time scalar's writer.
// It reports false for the zero time, which MarshalTime writes as null and
// the schema's non-null times refuse.
func writeTime(buf *bytes.Buffer, t time.Time) bool {
	if t.IsZero() {
		return false
	}
	graphql.MarshalTime(t).MarshalGQL(buf)
	return true
}
