package graph

import (
	"context"
	"errors"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tifeeds/tifeeds/input"
	"github.com/tifeeds/tifeeds/store"
)

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
			if err := input.CheckStrings(name, v); err != nil {
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
	var valErr *store.ValidationError
	errors.As(err, &valErr) // every check here returns one
	gerr := gqlerror.Errorf("%s", err.Error())
	gerr.Extensions = map[string]any{"code": CodeBadUserInput, "field": valErr.Field}
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
		return store.Invalid(field, "%q is not a valid %s", s, def.Name)
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
		return input.CheckString(field, v.Raw)
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
