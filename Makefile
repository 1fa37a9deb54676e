# tifeeds: `make run` to try it, `make test` for everything CI checks.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

GO       ?= go
BIN      := bin/tifeeds
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X main.version=$(VERSION)
export CGO_ENABLED := 1
# SQLite's FTS5, search's trigram index: mattn/go-sqlite3 builds it in only
# under this tag. Every go command below (and the e2e setup's) inherits it.
export GOFLAGS += -tags=sqlite_fts5

# Node is optional for building: without it the binary embeds a placeholder page.
HAVE_NODE := $(shell command -v npm >/dev/null 2>&1 && echo yes)

.PHONY: run build spa test test-go test-frontend screenshots generate check-generated bench bench-scale lint

run: build
	$(BIN) serve

build: spa
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/tifeeds

spa:
ifeq ($(HAVE_NODE),yes)
	@if [ -f frontend/package.json ]; then $(MAKE) -C frontend build; fi
else
	@echo "npm not found: building with the placeholder dashboard"
endif

test: lint check-generated test-go test-frontend

# Go tests on SQLite and on a throwaway PostgreSQL cluster. -v shows every
# test and its sqlite/postgres subtests; the === lines are noise.
test-go:
	scripts/with-postgres.sh $(GO) test -count=1 -timeout 15m -v ./... 2>&1 | grep -v -E '^=== (RUN|PAUSE|CONT|NAME)'

test-frontend:
	@if [ -f frontend/package.json ]; then $(MAKE) -C frontend test; else echo "no frontend yet"; fi

# Retakes the README's screenshots (docs/screenshots) with the browser tests;
# `make test` writes its own under frontend/test-results and changes nothing.
screenshots:
	$(MAKE) -C frontend screenshots

generate:
	$(GO) tool gqlgen generate

# Fails when graph/ differs from what `make generate` produces.
check-generated:
	@tmp=$$(mktemp -d); cp -r graph "$$tmp/graph"; \
	$(GO) tool gqlgen generate; \
	if ! diff -r "$$tmp/graph" graph >/dev/null; then \
		diff -r "$$tmp/graph" graph | head -40; rm -rf "$$tmp"; \
		echo "generated GraphQL code is stale: run 'make generate' and commit" >&2; exit 1; \
	fi; rm -rf "$$tmp"; echo "generated GraphQL code is up to date"

# The benches' PostgreSQL has the shared_buffers of a dedicated server (a
# quarter of the memory; scripts/with-postgres.sh), as a deployment would.
bench:
	TIFEEDS_PG_SHARED_BUFFERS=quarter scripts/with-postgres.sh $(GO) run ./cmd/tifeeds-bench

# The growth curve of issue 29: the databases built in SCALE_DIR (kept, so
# that a larger size builds on a smaller one) and measured at each size of
# SCALE; SCALE_FLAGS adds flags (-dbs, -scale-run, -scale-sweep, -runs).
SCALE ?= 1000000,3000000,10000000
SCALE_DIR ?= /tmp/tifeeds-bench-scale
bench-scale:
	mkdir -p $(SCALE_DIR)
	TIFEEDS_PG_DIR=$(SCALE_DIR)/pg TIFEEDS_PG_SHARED_BUFFERS=quarter scripts/with-postgres.sh $(GO) run ./cmd/tifeeds-bench \
		-scale $(SCALE) -scale-keep -dir $(SCALE_DIR) $(SCALE_FLAGS)

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './frontend/node_modules/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
