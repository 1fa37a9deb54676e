package architecture

import (
	"errors"
	"go/build"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/tifeeds/tifeeds"

// layer is a set of packages (a path, or a path and everything under it
// with "/...") and the packages of ours they may import. The first layer
// that names a package is its own.
type layer struct {
	pkgs string
	may  []string
	why  string
}

// sourceMay is what a source may import: the vocabulary, the contract and
// the fetch plumbing. Never the store: a source turns bytes into
// indicators; the runner writes them.
var sourceMay = []string{"ioc", "stix", "ingest/source", "ingest/egress", "ingest/internal/...",
	"ingest/builtin", "ingest/premium"}

// layers is docs/architecture.md in a table. Keep the two alike.
var layers = []layer{
	{"ioc", nil, "the vocabulary everyone uses imports nothing of ours"},
	{"stix", []string{"ioc"}, "STIX patterns are vocabulary too"},
	{"allowlist", []string{"ioc"}, "matching is pure"},
	{"internal/...", []string{"ioc", "internal/..."}, "small shared helpers stay leaves"},
	{"frontend", nil, "the embedded dashboard is files"},
	{"store/...", []string{"ioc", "allowlist", "stix", "internal/...", "store/..."}, "the store serves every layer above and knows none"},
	{"events/eventstest", []string{"ioc", "store", "events"}, "several instances on one database, for tests"},
	{"events", []string{"ioc", "store"}, "the bus carries stored things and knows no producer"},
	{"auth", []string{"ioc", "store"}, "credentials are checked against the store only"},
	{"audit", []string{"ioc", "store", "auth"}, "the audit log takes the caller from auth and writes to the store"},
	{"sso", []string{"ioc", "store", "auth", "audit"}, "the SAML service provider checks assertions against the store; the server holds its routes"},
	{"ingest/source/sourcetest", []string{"ioc", "ingest/source"}, "sources' tests drive the contract"},
	{"ingest/source", []string{"ioc"}, "the source contract sits below every source"},
	{"ingest/egress", []string{"ioc"}, "the egress policy is plumbing"},
	{"ingest/internal/...", []string{"ioc", "ingest/source", "ingest/egress", "ingest/internal/..."}, "fetch plumbing is shared by sources only"},
	{"ingest/builtin/vendortest", []string{"ioc", "ingest/source"}, "vendor simulators serve tests and the bench"},
	{"ingest/taxii/taxiitest", []string{"ioc", "stix"}, "the TAXII test server plays the server side"},
	{"ingest/builtin/...", sourceMay, "a source never touches the store"},
	{"ingest/premium/...", sourceMay, "a source never touches the store"},
	{"ingest/taxii/...", sourceMay, "a source never touches the store"},
	{"ingest/tsv/...", sourceMay, "a source never touches the store"},
	{"ingest", []string{"ioc", "stix", "allowlist", "internal/...", "store", "events", "ingest/..."}, "the runner writes what sources read"},
	// The service reaches the runner through interfaces it declares: the
	// runner's tests drive the service, so an import would be a cycle.
	{"feeds/...", []string{"ioc", "allowlist", "internal/...", "store", "events", "ingest/source", "ingest/egress",
		"ingest/builtin", "ingest/premium", "audit", "feeds/..."}, "the feed service reaches the runner through interfaces it declares"},
	{"input", []string{"ioc", "store", "allowlist"}, "what REST and GraphQL share is neither"},
	// Ingestion reaches the asset watch through the interface it declares
	// (ingest.AssetWatch); cmd hands it in.
	{"notify", []string{"ioc", "allowlist", "store", "events", "auth", "audit", "ingest/egress", "input"},
		"notifications: the outbox, its channels, the feed health and asset watches"},
	{"graph/...", []string{"ioc", "stix", "allowlist", "internal/...", "store", "events", "auth", "audit", "feeds", "ingest", "notify",
		"ingest/builtin", "ingest/premium", "ingest/source", "input", "graph/..."}, "resolvers call services; nothing REST needs"},
	{"server/...", []string{"ioc", "stix", "allowlist", "internal/...", "store", "events", "auth", "audit", "sso", "input", "graph/...",
		"server/...", "frontend"}, "the HTTP edge never imports ingestion"},
	{"cmd/...", []string{"..."}, "main wires everything"},
}

// matches reports whether the package path p (relative to the module) is
// named by pattern.
func matches(pattern, p string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pattern
}

func layerOf(p string) (layer, bool) {
	for _, l := range layers {
		if matches(l.pkgs, p) {
			return l, true
		}
	}
	return layer{}, false
}

// modulePackages maps every package of the module, by its path relative to
// the module, to the packages of ours it imports (tests excluded: a test
// may reach across layers to set up what it checks).
func modulePackages(t *testing.T) map[string][]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no module root at %s: %v", root, err)
	}
	ctx := build.Default
	ctx.BuildTags = append(ctx.BuildTags, "sqlite_fts5")
	pkgs := map[string][]string{}
	err = filepath.WalkDir(root, func(dir string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if dir != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		bp, err := ctx.ImportDir(dir, 0)
		if errors.As(err, new(*build.NoGoError)) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, dir)
		rel = filepath.ToSlash(rel)
		var ours []string
		for _, imp := range bp.Imports {
			if p, ok := strings.CutPrefix(imp, module+"/"); ok {
				ours = append(ours, p)
			}
		}
		pkgs[rel] = ours
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// TestImportsFollowTheLayers fails when a package imports what its layer
// may not (a source importing the store, the HTTP edge importing
// ingestion), or when a package sits in no layer.
func TestImportsFollowTheLayers(t *testing.T) {
	pkgs := modulePackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages; the walk missed the module", len(pkgs))
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for p := range pkgs {
			if !yield(p) {
				return
			}
		}
	})
	for _, p := range names {
		l, ok := layerOf(p)
		if !ok {
			t.Errorf("%s sits in no layer: place it in docs/architecture.md and in this test's table", p)
			continue
		}
		for _, imp := range pkgs[p] {
			if strings.HasPrefix(imp, "cmd/") {
				t.Errorf("%s imports %s: nothing imports a command", p, imp)
				continue
			}
			if !slices.ContainsFunc(l.may, func(m string) bool { return matches(m, imp) }) {
				t.Errorf("%s imports %s, which its layer (%s) may not: %s", p, imp, l.pkgs, l.why)
			}
		}
	}
}

// TestTheLayersCatchABreak checks the check: a source that imports the
// store, and the HTTP edge importing the runner, are refused.
func TestTheLayersCatchABreak(t *testing.T) {
	for _, c := range []struct{ pkg, imp string }{
		{"ingest/builtin/otx", "store"},
		{"ingest/taxii", "ingest"},
		{"server", "ingest"},
		{"server", "feeds"},
		{"store", "events"},
		{"ioc", "store"},
		{"events", "ingest"},
		{"feeds", "ingest"},
		{"ingest", "feeds"},
	} {
		l, ok := layerOf(c.pkg)
		if !ok {
			t.Fatalf("%s sits in no layer", c.pkg)
		}
		if slices.ContainsFunc(l.may, func(m string) bool { return matches(m, c.imp) }) {
			t.Errorf("%s may import %s; the layers must refuse it", c.pkg, c.imp)
		}
	}
	if !matches("ingest/...", "ingest") || matches("ingest/...", "ingestion") || !matches("ingest/...", path.Join("ingest", "taxii")) {
		t.Error("pattern matching is wrong")
	}
}
