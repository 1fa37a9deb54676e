package migrations

import (
	"context"
	"strconv"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect"
)

// ValueKeyPunctuation and ValueKeyLetters make the form of a value in
// PostgreSQL's value keys (ValueKeyForm): each ASCII punctuation character
// (and the space) one letter, everything else itself. pg_trgm keeps only letters and digits
// and breaks words at anything else, so that in the value itself
// "ost-4242" was the trigrams of the words "ost" and "4242", each common
// among ten million host names, URLs and addresses; in the form it is
// "ostz4242", whose "tz4" and "z42" are rare. The letters are among the
// rarest in IoC values; what they confuse ('-' and '_', '.' and 'q') the
// search tells apart on the IoC's own value (store/iocs_search.go).
const (
	ValueKeyPunctuation = " !\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
	ValueKeyLetters     = "zzzzzzzzzzzzzzqjzzzzzzzzzzzzzzzzz"
)

func init() {
	Migrations.MustRegister(func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() != dialect.PG {
			return nil // FTS5's trigrams keep punctuation (20261229000200)
		}
		return rebuildValueKeys(ctx, db, `SELECT id, `+ValueKeyForm("value")+` FROM ioc_value_keys`)
	}, func(ctx context.Context, db *bun.DB) error {
		if db.Dialect().Name() != dialect.PG {
			return nil
		}
		// The form does not go back: the values come from the IoCs, and
		// the keys of IoCs gone go with them.
		return rebuildValueKeys(ctx, db, `SELECT k.id, i.value FROM ioc_value_keys k JOIN iocs i ON i.id = k.id`)
	})
}

// rebuildValueKeys fills PostgreSQL's value keys anew from rows, a select
// of (id, value): a new table without indexes, then its primary key and
// trigram index built in one pass each. An UPDATE in place rewrote every
// row through both indexes and left the table twice its size until a
// vacuum.
func rebuildValueKeys(ctx context.Context, db *bun.DB, rows string) error {
	return exec(ctx, db,
		// The GIN build gathers its entries in this memory and writes a
		// batch each time it fills: more than the default 64 MB for ten
		// million values, for this transaction only (not measured
		// against the default; 2 min 33 s at 11,000,000 keys with it).
		`SET LOCAL maintenance_work_mem = '256MB'`,
		// A search reads a few hundred keys through a bitmap: a parallel
		// worker cost 15-20 ms to start and gained nothing.
		`CREATE TABLE ioc_value_keys_next (id BIGINT NOT NULL, value TEXT NOT NULL) WITH (parallel_workers = 0)`,
		`INSERT INTO ioc_value_keys_next (id, value) `+rows,
		`DROP TABLE ioc_value_keys`,
		`ALTER TABLE ioc_value_keys_next RENAME TO ioc_value_keys`,
		`ALTER TABLE ioc_value_keys ADD CONSTRAINT ioc_value_keys_pkey PRIMARY KEY (id)`,
		`CREATE INDEX ioc_value_keys_trgm_idx ON ioc_value_keys USING GIN (value gin_trgm_ops)`,
		// A new table has no statistics until autovacuum comes by.
		`ANALYZE ioc_value_keys`)
}

// ValueKeyForm is the SQL expression of column's form: a replace() of each
// character. translate() does the same in one call but took 3.7 µs a
// value (it looks up every character in the list of 33), the writer's key
// indexer 1.9 s of each 500,000 new IoCs; the replaces, each a byte
// search, took 0.3 s.
func ValueKeyForm(column string) string {
	form := column
	for i := range len(ValueKeyPunctuation) {
		// chr(): no quote, backslash or placeholder ("?") to escape.
		form = "replace(" + form + ", chr(" + strconv.Itoa(int(ValueKeyPunctuation[i])) + "), '" + ValueKeyLetters[i:i+1] + "')"
	}
	return form
}
