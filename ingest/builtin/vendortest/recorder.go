package vendortest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ioc"
)

// Recorder is a sink for tests of sources: it keeps, in order, what a
// source hands it. It is an source.Sink and an ioc.ListSink.
type Recorder struct {
	source.SinkBase
	Indicators []ioc.Indicator
	// Rejections are "<position>: <reason>".
	Rejections  []string
	Checkpoints []string
	// Lists are the lists said complete (Sink.ListComplete).
	Lists []string
	// Fail, when set, is what Indicator returns (the run's limit, the
	// store down), keeping nothing.
	Fail error
}

// Indicator keeps ind, or returns Fail.
func (r *Recorder) Indicator(_ context.Context, ind ioc.Indicator) error {
	if r.Fail != nil {
		return r.Fail
	}
	r.Indicators = append(r.Indicators, ind)
	return nil
}

// Rejected keeps "<position>: <reason>".
func (r *Recorder) Rejected(position int64, reason string) {
	r.Rejections = append(r.Rejections, fmt.Sprintf("%d: %s", position, reason))
}

// Checkpoint keeps cursor.
func (r *Recorder) Checkpoint(_ context.Context, cursor string) error {
	r.Checkpoints = append(r.Checkpoints, cursor)
	return nil
}

// ListComplete keeps source.
func (r *Recorder) ListComplete(source string, _ time.Time) { r.Lists = append(r.Lists, source) }

// Find returns the first indicator of kind with value.
func (r *Recorder) Find(kind ioc.Kind, value string) (ioc.Indicator, bool) {
	for _, ind := range r.Indicators {
		if ind.Kind == kind && ind.Value == value {
			return ind, true
		}
	}
	return ioc.Indicator{}, false
}

// Values returns the values of the indicators of kind, in order.
func (r *Recorder) Values(kind ioc.Kind) []string {
	var vs []string
	for _, ind := range r.Indicators {
		if ind.Kind == kind {
			vs = append(vs, ind.Value)
		}
	}
	return vs
}

// Testdata returns the contents of testdata/name (the directory of the
// test being run), failing the test when it cannot be read.
func Testdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
