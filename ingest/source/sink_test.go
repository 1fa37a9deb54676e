package source

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/tifeeds/tifeeds/ioc"
)

type progressRecorder struct {
	SinkBase
	reads []int64
}

func (r *progressRecorder) Indicator(context.Context, ioc.Indicator) error { return nil }
func (r *progressRecorder) Rejected(int64, string)                         {}
func (r *progressRecorder) Checkpoint(context.Context, string) error       { return nil }
func (r *progressRecorder) Downloaded(read, total int64)                   { r.reads = append(r.reads, read) }

func TestProgressReader(t *testing.T) {
	r := &progressRecorder{}
	body := strings.NewReader(strings.Repeat("x", 200<<10))
	n, err := io.Copy(io.Discard, ProgressReader(r, body, 200<<10))
	if err != nil || n != 200<<10 {
		t.Fatalf("copy: %d, %v", n, err)
	}
	if len(r.reads) < 3 || r.reads[len(r.reads)-1] != 200<<10 {
		t.Errorf("progress reports %v, want several ending at %d", r.reads, 200<<10)
	}
	// A small download reports its first bytes at once, not at its end only.
	r = &progressRecorder{}
	pr := ProgressReader(r, strings.NewReader("ip\t10.0.0.1\tsrc\t50\n"), -1)
	buf := make([]byte, 4)
	if _, err := pr.Read(buf); err != nil || len(r.reads) != 1 || r.reads[0] != 4 {
		t.Errorf("after the first read: reports %v, %v; want one of 4 bytes", r.reads, err)
	}
}
