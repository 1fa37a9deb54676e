package graph

import (
	"context"
	"io"
	"sync/atomic"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// answerLimit bounds the bytes of each query or mutation answer. gqlgen
// writes an operation's data into one buffer before any of it is sent, so
// an answer is memory the size of the answer; the cost limits bound how
// many values it holds, this bounds their bytes (long values, many tags).
// The root fields' writes are counted, and once past the limit discarded;
// the answer is then replaced by a refusal. Subscriptions are left alone:
// each event is its own small answer.
type answerLimit struct{ maxBytes int64 }

var _ interface {
	graphql.HandlerExtension
	graphql.OperationInterceptor
	graphql.RootFieldInterceptor
} = answerLimit{}

func (answerLimit) ExtensionName() string { return "AnswerLimit" }

func (answerLimit) Validate(graphql.ExecutableSchema) error { return nil }

// answerBudget is what remains of one answer's bytes.
type answerBudget struct {
	left     atomic.Int64
	exceeded atomic.Bool
}

type answerBudgetKey struct{}

// answerBudgetFrom returns the operation's budget, nil outside a query or
// mutation.
func answerBudgetFrom(ctx context.Context) *answerBudget {
	b, _ := ctx.Value(answerBudgetKey{}).(*answerBudget)
	return b
}

// spend takes n bytes from the budget and reports whether they fit.
func (b *answerBudget) spend(n int) bool {
	if b.exceeded.Load() || b.left.Add(-int64(n)) < 0 {
		b.exceeded.Store(true)
		return false
	}
	return true
}

func (l answerLimit) InterceptOperation(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
	op := graphql.GetOperationContext(ctx).Operation
	if l.maxBytes <= 0 || op == nil || op.Operation == ast.Subscription {
		return next(ctx)
	}
	b := &answerBudget{}
	b.left.Store(l.maxBytes)
	responses := next(context.WithValue(ctx, answerBudgetKey{}, b))
	return func(ctx context.Context) *graphql.Response {
		resp := responses(ctx)
		if resp == nil || !b.exceeded.Load() {
			return resp
		}
		return &graphql.Response{Errors: gqlerror.List{limitError("answerBytes", int(l.maxBytes),
			"the answer is larger than %d bytes, the limit of one answer: ask for fewer values or fields per request", l.maxBytes)}}
	}
}

func (l answerLimit) InterceptRootField(ctx context.Context, next graphql.RootResolver) graphql.Marshaler {
	m := next(ctx)
	b := answerBudgetFrom(ctx)
	if _, prepaid := m.(*FastLookupAnswer); prepaid || b == nil {
		// The bulk-lookup writer spends from the budget as it writes.
		return m
	}
	return budgetedAnswer{m: m, budget: b}
}

// budgetedAnswer writes a root field's value within the answer's budget.
type budgetedAnswer struct {
	m      graphql.Marshaler
	budget *answerBudget
}

func (a budgetedAnswer) MarshalGQL(w io.Writer) {
	a.m.MarshalGQL(budgetedWriter{w: w, budget: a.budget})
}

// budgetedWriter passes writes on while they fit the budget and drops them
// after: the answer is replaced then, and what is dropped is never held.
type budgetedWriter struct {
	w      io.Writer
	budget *answerBudget
}

func (bw budgetedWriter) Write(p []byte) (int, error) {
	if !bw.budget.spend(len(p)) {
		return len(p), nil
	}
	return bw.w.Write(p)
}
