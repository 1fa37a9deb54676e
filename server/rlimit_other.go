//go:build !unix

package server

func raiseFileLimit() error { return nil }
