package stix

import (
	"bufio"
	"encoding/json"
	"io"

	"github.com/google/uuid"
)

// BundleWriter streams a STIX bundle: its objects go out one by one, so a
// bundle of millions of indicators needs the memory of one.
type BundleWriter struct {
	buf   *bufio.Writer
	enc   *json.Encoder
	first bool
}

// NewBundleWriter starts a bundle with a random id on w.
func NewBundleWriter(w io.Writer) (*BundleWriter, error) {
	b := &BundleWriter{buf: bufio.NewWriterSize(w, 64<<10), first: true}
	b.enc = json.NewEncoder(b.buf)
	b.enc.SetEscapeHTML(false)
	_, err := b.buf.WriteString(`{"type":"bundle","id":"bundle--` + uuid.NewString() + `","objects":[`)
	return b, err
}

// Write adds one object.
func (b *BundleWriter) Write(obj any) error {
	if !b.first {
		if err := b.buf.WriteByte(','); err != nil {
			return err
		}
	}
	b.first = false
	return b.enc.Encode(obj) // its newline is JSON whitespace
}

// Close ends the bundle and sends what is buffered.
func (b *BundleWriter) Close() error {
	if _, err := b.buf.WriteString("]}\n"); err != nil {
		return err
	}
	return b.buf.Flush()
}

// Flush sends what is buffered, for a long stream.
func (b *BundleWriter) Flush() error { return b.buf.Flush() }
