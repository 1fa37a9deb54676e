package ingest

import (
	"cmp"

	"github.com/tifeeds/tifeeds/ingest/builtin/circl"
	"github.com/tifeeds/tifeeds/ingest/builtin/etopen"
	"github.com/tifeeds/tifeeds/ingest/builtin/etrep"
	"github.com/tifeeds/tifeeds/ingest/builtin/openphish"
	"github.com/tifeeds/tifeeds/ingest/builtin/otx"
	"github.com/tifeeds/tifeeds/ingest/builtin/phishtank"
	"github.com/tifeeds/tifeeds/ingest/builtin/threatfox"
	"github.com/tifeeds/tifeeds/ingest/builtin/urlhaus"
	"github.com/tifeeds/tifeeds/ingest/premium"
	"github.com/tifeeds/tifeeds/ingest/premium/falcon"
	"github.com/tifeeds/tifeeds/ingest/premium/gti"
	"github.com/tifeeds/tifeeds/ingest/premium/risklist"
	"github.com/tifeeds/tifeeds/ingest/premium/threatstream"
	"github.com/tifeeds/tifeeds/ingest/source"
	"github.com/tifeeds/tifeeds/ingest/taxii"
	"github.com/tifeeds/tifeeds/ingest/tsv"
)

// KindOptions tunes the kinds that take tuning; zero values take the
// spec's limits.
type KindOptions struct {
	TSV      tsv.Options
	TAXII    taxii.Options
	FeedList premium.FeedListOptions
	// WriteRate is the constant rate, in indicators per hour, of the
	// premium kinds that declare one (RISK_LIST); 0: DefaultWriteRate.
	WriteRate float64
}

// Kinds is every kind this build fetches, built-in, premium and custom:
// one line per kind. A new kind is a new package and a line here.
func Kinds(o KindOptions) []source.Kind {
	return []source.Kind{
		// Built-in.
		otx.Kind(),
		circl.Kind(),
		etrep.Kind(),
		etopen.Kind(),
		phishtank.Kind(),
		urlhaus.Kind(),
		openphish.Kind(),
		threatfox.Kind(),
		// Premium.
		gti.Kind(),
		risklist.Kind(cmp.Or(o.WriteRate, DefaultWriteRate)),
		threatstream.Kind(),
		falcon.Kind(),
		premium.FeedListKind(o.FeedList),
		taxii.DarkWebKind(o.TAXII),
		// Custom.
		taxii.Kind(o.TAXII),
		tsv.Kind(o.TSV),
	}
}
