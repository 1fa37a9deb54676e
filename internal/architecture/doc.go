// Package architecture holds no code, only the test that keeps the
// package picture of docs/architecture.md true: every package of the
// module sits in one layer, and imports only what its layer may.
package architecture
