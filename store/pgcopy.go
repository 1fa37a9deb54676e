package store

import (
	"context"
	"encoding/binary"
	"io"

	"github.com/jackc/pgx/v5/pgconn"
)

// copyChunk is how much encoded COPY data is handed to the connection at a
// time: rows are encoded while the server works on the chunk before.
const copyChunk = 64 << 10

// copyEncoder appends rows in PostgreSQL's binary COPY format. The batch
// writer encodes its few column types itself: pgx's generic CopyFrom boxed
// every value in an []any and planned its encoding value by value, a third
// of the ingesting process's CPU.
type copyEncoder struct{ buf []byte }

// row starts a row of n fields.
func (e *copyEncoder) row(n int) { e.buf = binary.BigEndian.AppendUint16(e.buf, uint16(n)) }

func (e *copyEncoder) int8(v int64) {
	e.buf = binary.BigEndian.AppendUint32(e.buf, 8)
	e.buf = binary.BigEndian.AppendUint64(e.buf, uint64(v))
}

func (e *copyEncoder) int4(v int32) {
	e.buf = binary.BigEndian.AppendUint32(e.buf, 4)
	e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(v))
}

func (e *copyEncoder) text(s string) {
	e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(len(s)))
	e.buf = append(e.buf, s...)
}

// null writes SQL NULL.
func (e *copyEncoder) null() { e.buf = binary.BigEndian.AppendUint32(e.buf, 0xffffffff) }

// jsonb takes JSON text: jsonb's binary form is a version byte before it.
func (e *copyEncoder) jsonb(s string) {
	e.buf = binary.BigEndian.AppendUint32(e.buf, uint32(len(s)+1))
	e.buf = append(e.buf, 1)
	e.buf = append(e.buf, s...)
}

// copyBinary runs copySQL (a COPY ... FROM STDIN (FORMAT binary)) with n
// rows, row i written by encode, and returns how many rows it stored. The
// rows are encoded on a goroutine of their own, a chunk ahead of the
// connection.
func copyBinary(ctx context.Context, conn *pgconn.PgConn, copySQL string, n int, encode func(e *copyEncoder, i int)) (int64, error) {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		e := copyEncoder{buf: make([]byte, 0, copyChunk+4<<10)}
		e.buf = append(e.buf, "PGCOPY\n\377\r\n\000"...)
		e.buf = binary.BigEndian.AppendUint32(e.buf, 0) // flags
		e.buf = binary.BigEndian.AppendUint32(e.buf, 0) // header extension
		for i := range n {
			encode(&e, i)
			if len(e.buf) >= copyChunk {
				// A pipe's Write returns once the reader has taken it
				// all, so the buffer is free again; it fails once the
				// copy has stopped reading.
				if _, err := pw.Write(e.buf); err != nil {
					return
				}
				e.buf = e.buf[:0]
			}
		}
		e.buf = binary.BigEndian.AppendUint16(e.buf, 0xffff) // end of data
		if _, err := pw.Write(e.buf); err != nil {
			return
		}
		pw.Close()
	}()
	tag, err := conn.CopyFrom(ctx, pr, copySQL)
	pr.Close() // ends a write the copy, failed, no longer reads
	<-done
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}
