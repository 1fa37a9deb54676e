package graph

import (
	"context"
	"fmt"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// MaxStringBytes bounds every string a client sends, REST or GraphQL,
// unless longStrings names its field: names, URLs, searches and indicator
// values are all far shorter. SQLite refuses LIKE patterns over 50,000
// bytes; PostgreSQL refuses NUL in text; both used to surface as 500s.
const MaxStringBytes = 4096

// longStrings are the free-text fields allowed more than MaxStringBytes,
// by the name they have in REST and in GraphQL. The store still applies
// its own, tighter, rule to each (a logo of 256 KiB).
var longStrings = map[string]int{
	"info":            64 << 10,
	"idpCertificate":  64 << 10,
	"idp_certificate": 64 << 10,
	"idpMetadata":     256 << 10,
	"idp_metadata":    256 << 10,
	"logo":            512 << 10,
	"tgrp_logo":       512 << 10,
}

// InputError is a client string the service will not take: a NUL byte or
// over-long. Field is the name of the field that holds it.
type InputError struct {
	Field string
	Msg   string
}

func (e *InputError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// CheckString refuses a string with a NUL byte or longer than its field's
// limit.
func CheckString(field, v string) error {
	limit := MaxStringBytes
	if n, ok := longStrings[field]; ok {
		limit = n
	}
	switch {
	case len(v) > limit:
		return &InputError{Field: field, Msg: fmt.Sprintf("must have at most %d bytes, not %d", limit, len(v))}
	case strings.IndexByte(v, 0) >= 0:
		return &InputError{Field: field, Msg: "must not contain NUL bytes"}
	}
	return nil
}

// CheckStrings applies CheckString to every string (and object key) of a
// decoded JSON value; field names the value, and nested objects name their
// own members.
func CheckStrings(field string, v any) error {
	switch v := v.(type) {
	case string:
		return CheckString(field, v)
	case []any:
		for _, e := range v {
			if err := CheckStrings(field, e); err != nil {
				return err
			}
		}
	case map[string]any:
		for k, e := range v {
			if err := CheckString(field, k); err != nil {
				return err
			}
			if err := CheckStrings(k, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// inputLimits checks every string of an operation, in its variables and in
// literal arguments, and the enum values of its variables, before anything
// runs: one check for all fields.
type inputLimits struct{ schema *ast.Schema }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationContextMutator
} = &inputLimits{}

func (*inputLimits) ExtensionName() string { return "InputLimits" }
func (l *inputLimits) Validate(es graphql.ExecutableSchema) error {
	l.schema = es.Schema()
	return nil
}

func (l *inputLimits) MutateOperationContext(_ context.Context, opCtx *graphql.OperationContext) *gqlerror.Error {
	err := func() error {
		for name, v := range opCtx.Variables {
			if err := CheckStrings(name, v); err != nil {
				return err
			}
		}
		if op := opCtx.Doc.Operations.ForName(opCtx.OperationName); op != nil {
			for _, def := range op.VariableDefinitions {
				if err := l.checkEnums(def.Variable, def.Type, opCtx.Variables[def.Variable]); err != nil {
					return err
				}
			}
		}
		for _, op := range opCtx.Doc.Operations {
			if err := checkLiterals(op.SelectionSet, op.Directives); err != nil {
				return err
			}
		}
		for _, f := range opCtx.Doc.Fragments {
			if err := checkLiterals(f.SelectionSet, f.Directives); err != nil {
				return err
			}
		}
		return nil
	}()
	if err == nil {
		return nil
	}
	gerr := gqlerror.Errorf("%s", err.Error())
	gerr.Extensions = map[string]any{"code": CodeBadUserInput, "field": err.(*InputError).Field}
	return gerr
}

// checkEnums refuses enum values in variables that are not exactly one of
// the enum's names. gqlparser's variable validation lets other spellings
// ("iocs" for IOCS) through to the generated unmarshalling, which then
// failed as an internal error.
func (l *inputLimits) checkEnums(field string, t *ast.Type, v any) error {
	if v == nil || t == nil {
		return nil
	}
	if t.Elem != nil {
		if list, ok := v.([]any); ok {
			for _, e := range list {
				if err := l.checkEnums(field, t.Elem, e); err != nil {
					return err
				}
			}
			return nil
		}
		return l.checkEnums(field, t.Elem, v) // a single value stands for a list of one
	}
	def := l.schema.Types[t.NamedType]
	if def == nil {
		return nil
	}
	switch def.Kind {
	case ast.Enum:
		s, ok := v.(string)
		if !ok {
			return nil // gqlparser reports values of the wrong kind
		}
		for _, e := range def.EnumValues {
			if e.Name == s {
				return nil
			}
		}
		return &InputError{Field: field, Msg: fmt.Sprintf("%q is not a valid %s", s, def.Name)}
	case ast.InputObject:
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		for _, f := range def.Fields {
			if err := l.checkEnums(f.Name, f.Type, m[f.Name]); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkLiterals(set ast.SelectionSet, dirs ast.DirectiveList) error {
	for _, d := range dirs {
		if err := checkArguments(d.Arguments); err != nil {
			return err
		}
	}
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			if err := checkArguments(s.Arguments); err != nil {
				return err
			}
			if err := checkLiterals(s.SelectionSet, s.Directives); err != nil {
				return err
			}
		case *ast.InlineFragment:
			if err := checkLiterals(s.SelectionSet, s.Directives); err != nil {
				return err
			}
		case *ast.FragmentSpread:
			if err := checkLiterals(nil, s.Directives); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkArguments(args ast.ArgumentList) error {
	for _, a := range args {
		if err := checkValue(a.Name, a.Value); err != nil {
			return err
		}
	}
	return nil
}

func checkValue(field string, v *ast.Value) error {
	if v == nil {
		return nil
	}
	switch v.Kind {
	case ast.StringValue, ast.BlockValue:
		return CheckString(field, v.Raw)
	case ast.ListValue:
		for _, c := range v.Children {
			if err := checkValue(field, c.Value); err != nil {
				return err
			}
		}
	case ast.ObjectValue:
		for _, c := range v.Children {
			if err := checkValue(c.Name, c.Value); err != nil {
				return err
			}
		}
	}
	return nil
}
