package taxiisrv

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/tifeeds/tifeeds/ioc"
	"github.com/tifeeds/tifeeds/stix"
	"github.com/tifeeds/tifeeds/store"
)

// Prefix is where the server answers; APIRootPath its one API root.
const (
	Prefix      = "/taxii2/"
	APIRootPath = Prefix + "api/"
)

// chunkRows is how many rows a page reads at a time when filters checked
// per object (match[id], match[version] timestamps) may refuse rows.
const chunkRows = 2000

// Options are what the handler needs to know of its deployment.
type Options struct {
	// PublicURL is the URL clients reach tifeeds at (server.Config's); empty:
	// discovery names its API root with a relative URL, which TAXII 2.1
	// (section 4.1.1) allows and clients resolve against discovery's URL.
	PublicURL string
	// Flagged reports whether a flagging warninglist matches an indicator
	// (warnings=exclude leaves those out); nil: none does.
	Flagged func(kind ioc.Kind, value string) bool
}

// Store is what the TAXII server asks of the store: the organisation's id
// (its identity object) and the IoC changes its collections page through.
type Store interface {
	OrgID(ctx context.Context) (string, error)
	IoCChanges(ctx context.Context, q store.IoCChangesQuery, fn func(*store.IoCChange) error) error
}

// Handler serves TAXII 2.1 under Prefix.
type Handler struct {
	store Store
	log   *slog.Logger
	opts  Options
	mux   *http.ServeMux

	mu    sync.Mutex
	orgID string // read once: it never changes
}

// New builds the handler.
func New(st Store, log *slog.Logger, opts Options) *Handler {
	h := &Handler{store: st, log: log, opts: opts, mux: http.NewServeMux()}
	h.mux.HandleFunc(Prefix+"{$}", h.discovery)
	h.mux.HandleFunc(APIRootPath+"{$}", h.apiRoot)
	h.mux.HandleFunc(APIRootPath+"collections/{$}", h.collections)
	h.mux.HandleFunc(APIRootPath+"collections/{id}/{$}", h.collection)
	h.mux.HandleFunc(APIRootPath+"collections/{id}/objects/{$}", h.objects)
	h.mux.HandleFunc(APIRootPath+"collections/{id}/objects/{object}/{$}", h.object)
	h.mux.HandleFunc(APIRootPath+"collections/{id}/objects/{object}/versions/{$}", h.versions)
	h.mux.HandleFunc(APIRootPath+"collections/{id}/manifest/{$}", h.manifest)
	h.mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, http.StatusNotFound, "Not found", "no TAXII resource at "+r.URL.Path)
	})
	return h
}

// ServeHTTP checks the method and Accept header, then routes.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodPost:
		// The collections are read-only (can_write false); a body that is
		// not TAXII is refused before that is said.
		if !isTAXIIContent(r.Header.Get("Content-Type")) {
			WriteError(w, http.StatusUnsupportedMediaType, "Unsupported media type",
				"request bodies must be "+MediaType)
			return
		}
		WriteError(w, http.StatusForbidden, "Read-only", "tifeeds' TAXII collections cannot be written")
		return
	default:
		w.Header().Set("Allow", "GET, HEAD")
		WriteError(w, http.StatusMethodNotAllowed, "Method not allowed", r.Method+" is not supported")
		return
	}
	if !acceptable(r.Header.Get("Accept")) {
		WriteError(w, http.StatusNotAcceptable, "Not acceptable", "this server answers only "+MediaType)
		return
	}
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) org(ctx context.Context) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.orgID == "" {
		id, err := h.store.OrgID(ctx)
		if err != nil {
			return "", err
		}
		h.orgID = id
	}
	return h.orgID, nil
}

// fail answers an error of the store or of the request.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, errBadQuery):
		WriteError(w, http.StatusBadRequest, "Bad request", err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		WriteError(w, http.StatusServiceUnavailable, "Timeout", "the request took longer than the server allows; ask for a smaller limit")
	default:
		// The driver's words name hosts and files: logged, not shown.
		h.log.ErrorContext(r.Context(), "TAXII request failed", "path", r.URL.Path, "error", err)
		w.Header().Set("Retry-After", "5")
		WriteError(w, http.StatusServiceUnavailable, "Unavailable", "the server cannot answer now; try again later")
	}
}

func (h *Handler) discovery(w http.ResponseWriter, r *http.Request) {
	root := h.apiRootURL()
	writeJSON(w, http.StatusOK, discovery{Title: "tifeeds TAXII 2.1 server",
		Description: "Read-only TAXII 2.1 access to tifeeds' live indicators.",
		Default:     root, APIRoots: []string{root}})
}

// apiRootURL is the API root's URL from configuration alone: the request's
// Host header is the client's to forge, and a discovery answer that echoed
// it would send clients, credentials and all, to another server.
func (h *Handler) apiRootURL() string {
	if h.opts.PublicURL == "" {
		return APIRootPath
	}
	return strings.TrimSuffix(h.opts.PublicURL, "/") + APIRootPath
}

// maxContentLength is what the API root announces: this server takes no
// bodies, so the smallest the request bound allows.
const maxContentLength = 1 << 20

func (h *Handler) apiRoot(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, apiRoot{Title: "tifeeds", Description: "Indicators of compromise of every feed of this tifeeds",
		Versions: []string{MediaType}, MaxContentLength: maxContentLength})
}

func (h *Handler) collections(w http.ResponseWriter, r *http.Request) {
	org, err := h.org(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := collections{}
	for _, d := range collectionDefs {
		out.Collections = append(out.Collections, d.resource(org))
	}
	writeJSON(w, http.StatusOK, out)
}

// lookup finds the collection of the request's {id}, or answers 404.
func (h *Handler) lookup(w http.ResponseWriter, r *http.Request) (collectionDef, string, bool) {
	org, err := h.org(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return collectionDef{}, "", false
	}
	id := r.PathValue("id")
	for _, d := range collectionDefs {
		if collectionID(org, d.name) == id {
			return d, org, true
		}
	}
	WriteError(w, http.StatusNotFound, "Collection not found", "no collection "+id+" in this API root")
	return collectionDef{}, "", false
}

func (h *Handler) collection(w http.ResponseWriter, r *http.Request) {
	d, org, ok := h.lookup(w, r)
	if ok {
		writeJSON(w, http.StatusOK, d.resource(org))
	}
}

// pageOf is a page of a collection.
type pageOf struct {
	objects []stix.Indicator
	keys    []store.ChangeKey
	more    bool
	// split says the page is all one group of one stamp, larger than limit
	// (stamped before each IoC row took its own).
	split bool
}

// read reads the page of d that f selects.
func (h *Handler) read(ctx context.Context, d collectionDef, org string, f filter) (pageOf, error) {
	var p pageOf
	if f.none {
		return p, nil
	}
	identity := stix.NewIdentity(org).ID
	want := f.limit + 1 // one more says whether there is more
	q := store.IoCChangesQuery{Kinds: d.kinds, After: f.after, Limit: want, WithText: true}
	if f.perObject() {
		q.Limit = chunkRows
	}
	for {
		n := 0
		err := h.store.IoCChanges(ctx, q, func(c *store.IoCChange) error {
			n++
			q.After = c.Key
			if len(p.objects) == want {
				return nil
			}
			if f.perObject() && !f.keep(stix.IndicatorID(c.Type, c.Value), c.Key.At) {
				return nil
			}
			if f.noWarnings && h.opts.Flagged != nil && h.opts.Flagged(c.Type, c.Value) {
				return nil
			}
			rule := c.Text // "" but for a rule; AlertOnly returns "" as it is
			if !c.RuleActionsAllowed {
				rule = ioc.AlertOnly(rule)
			}
			p.objects = append(p.objects, stix.NewIndicator(stix.IoC{Kind: c.Type, Value: c.Value, Text: rule,
				Score: c.Score, Tags: append([]string(nil), c.Tags...), FirstSeen: c.FirstSeen, ExpiresAt: c.ExpiresAt,
				ChangedAt: c.Key.ChangedAt()}, identity))
			p.keys = append(p.keys, c.Key)
			return nil
		})
		if err != nil {
			return p, err
		}
		if !f.perObject() || len(p.objects) == want || n < q.Limit {
			break
		}
	}
	if len(p.objects) > f.limit {
		p.more = true
		end := f.limit
		if p.keys[end].At == p.keys[end-1].At {
			// The page would end inside a group of one stamp (IoCs stamped
			// before each row took its own): it ends before the group
			// instead (TAXII lets a page be shorter than limit), unless the
			// group is all of it.
			group := p.keys[end].At
			for end > 0 && p.keys[end-1].At == group {
				end--
			}
			if end == 0 {
				end, p.split = f.limit, true
			}
		}
		p.objects, p.keys = p.objects[:end], p.keys[:end]
	}
	return p, nil
}

// dateAdded sets X-TAXII-Date-Added-First and -Last (TAXII 2.1 section
// 3.3.1): the date added of the page's first and last object, exactly as
// the manifest says it. An IoC's date added is its change stamp, the keyset
// of paging, and every IoC row written takes a stamp of its own
// (store/iocs_changes.go): a client that resumes with added_after = Last,
// as the spec allows, gets what follows the page, however large the write
// it came from. IoCs stamped before stamps were per row may share one;
// pages end between such stamps, and a page that is all one group of them
// (larger than limit) says a microsecond before it in both: such a client
// then reads the group again rather than skip its rest.
func dateAdded(w http.ResponseWriter, p pageOf) {
	if len(p.keys) == 0 {
		return
	}
	first, last := p.keys[0].At, p.keys[len(p.keys)-1].At
	if p.split {
		first, last = first-1, last-1
	}
	w.Header().Set("X-TAXII-Date-Added-First", stix.Timestamp(store.ChangeKey{At: first}.ChangedAt()))
	w.Header().Set("X-TAXII-Date-Added-Last", stix.Timestamp(store.ChangeKey{At: last}.ChangedAt()))
}

func (h *Handler) paged(w http.ResponseWriter, r *http.Request, objectID string) (pageOf, bool) {
	d, org, ok := h.lookup(w, r)
	if !ok {
		return pageOf{}, false
	}
	f, err := parseFilter(r.URL.Query(), objectID == "")
	if err != nil {
		h.fail(w, r, err)
		return pageOf{}, false
	}
	if objectID != "" {
		if !strings.HasPrefix(objectID, "indicator--") {
			// Collections hold indicators only: no need to look.
			WriteError(w, http.StatusNotFound, "Object not found", "no object "+objectID+" in this collection")
			return pageOf{}, false
		}
		f.ids = map[string]bool{objectID: true}
	}
	p, err := h.read(r.Context(), d, org, f)
	if err != nil {
		h.fail(w, r, err)
		return pageOf{}, false
	}
	if objectID != "" && len(p.objects) == 0 {
		WriteError(w, http.StatusNotFound, "Object not found", "no object "+objectID+" in this collection matches")
		return pageOf{}, false
	}
	return p, true
}

func (p pageOf) next() string {
	if !p.more {
		return ""
	}
	return formatNext(p.keys[len(p.keys)-1])
}

func (h *Handler) objects(w http.ResponseWriter, r *http.Request) {
	p, ok := h.paged(w, r, "")
	if !ok {
		return
	}
	h.writeObjects(w, p)
}

func (h *Handler) writeObjects(w http.ResponseWriter, p pageOf) {
	env := envelope{More: p.more, Next: p.next(), Objects: make([]any, len(p.objects))}
	for i := range p.objects {
		env.Objects[i] = &p.objects[i]
	}
	dateAdded(w, p)
	writeJSON(w, http.StatusOK, env)
}

func (h *Handler) object(w http.ResponseWriter, r *http.Request) {
	p, ok := h.paged(w, r, r.PathValue("object"))
	if ok {
		h.writeObjects(w, p)
	}
}

func (h *Handler) versions(w http.ResponseWriter, r *http.Request) {
	p, ok := h.paged(w, r, r.PathValue("object"))
	if !ok {
		return
	}
	out := versions{More: p.more}
	for _, o := range p.objects {
		out.Versions = append(out.Versions, o.Modified)
	}
	dateAdded(w, p)
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) manifest(w http.ResponseWriter, r *http.Request) {
	p, ok := h.paged(w, r, "")
	if !ok {
		return
	}
	out := manifest{More: p.more, Next: p.next()}
	for i, o := range p.objects {
		out.Objects = append(out.Objects, manifestRecord{ID: o.ID, DateAdded: stix.Timestamp(p.keys[i].ChangedAt()),
			Version: o.Modified, MediaType: STIXMediaType})
	}
	dateAdded(w, p)
	writeJSON(w, http.StatusOK, out)
}
