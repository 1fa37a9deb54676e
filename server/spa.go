package server

import (
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/tifeeds/tifeeds/frontend"
)

const placeholderPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tifeeds</title></head>
<body><h1>tifeeds</h1>
<p>The dashboard has not been built into this binary. Run <code>make run</code>
with Node.js installed, or use the GraphQL API at <a href="/graphql">/graphql</a>.</p>
</body></html>
`

// spaHandler serves the embedded dashboard. Paths that are not files get
// index.html, so the SPA's router owns them (reload and deep links work).
func spaHandler() http.Handler {
	dist, err := fs.Sub(frontend.Dist, "dist")
	if err != nil {
		panic(err) // the embed pattern guarantees dist exists
	}
	index, err := fs.ReadFile(dist, "index.html")
	if err != nil {
		index = []byte(placeholderPage)
	}
	files := http.FileServerFS(dist)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed on "+r.URL.Path)
			return
		}
		name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
		if name != "" && name != "index.html" {
			if st, err := fs.Stat(dist, name); err == nil && !st.IsDir() {
				if strings.HasPrefix(name, "assets/") {
					// Vite names assets by content hash: they never change.
					w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
				}
				files.ServeHTTP(w, r)
				return
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(index)
	})
}
