// Package frontend embeds the built single-page app. `npm run build` writes
// dist/; without it, dist holds only .gitkeep and the server shows a
// placeholder page, so `go build ./...` never needs Node.
package frontend

import "embed"

// Dist is the built SPA (frontend/dist).
//
//go:embed all:dist
var Dist embed.FS
