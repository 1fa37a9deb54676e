// Package openapi holds the OpenAPI 3.1 document of the REST API under
// /connect/api/v1. openapi.json is written by hand and is the contract:
// the server's tests check every REST answer they see against it, and that
// it lists exactly the routes the server registers.
package openapi

import _ "embed"

// Document is the OpenAPI 3.1 document, as JSON.
//
//go:embed openapi.json
var Document []byte
