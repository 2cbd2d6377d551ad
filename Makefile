# The README's two commands are `make run` and `make test`.
GO ?= go

# The version and commit that `make build` stamps into the binaries
# (`companion version`); the image gets the same as build arguments.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS = -X main.version=$(VERSION) -X main.commit=$(COMMIT)

# The Go modules: the service, and its deployment checks, a module of
# their own so that the service's go.mod does not require what they use.
MODULES = . deploy

.PHONY: run install test services golden check build fakes help up down bench-compare bench-streams bench-recall eval-safety load load-smoke

## run: serve the API on its embedded defaults (fake model) at 127.0.0.1:4111; PORT=4112 serves it at 127.0.0.1:4112
# Without PORT, no -addr is given, so that COMPANION_ADDR still applies.
run:
	$(GO) run ./cmd/companion serve $(if $(PORT),-addr 127.0.0.1:$(PORT))

## install: install the companion command where go install puts commands (GOBIN, else GOPATH/bin), stamped as build does
install:
	$(GO) install -ldflags "$(LDFLAGS)" ./cmd/companion

## test: the whole suite, with the race detector, as CI runs it; ends with a count of tests passed, failed, skipped
test: services check
	$(GO) run ./tools/testsummary $(foreach m,$(MODULES),-dir $(m)) -race -count=1 ./...

## services: check that PostgreSQL, Redis, Node (with the client packages), Chromium, Prometheus and jq are there for the tests;
## what is missing is installed only with CI=true or COMPANION_INSTALL=1, else its tests skip and say why
services:
	@bash .ci/postgres || [ "$$CI" != true ]
	@bash .ci/redis || [ "$$CI" != true ]
	@bash .ci/node || [ "$$CI" != true ]
	@bash .ci/browser || [ "$$CI" != true ]
	@bash .ci/prometheus || [ "$$CI" != true ]
	@bash .ci/jq || [ "$$CI" != true ]

## check: formatting, vet and a tidy go.mod, in each module
check:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	@for m in $(MODULES); do \
	  echo "$$m: go vet ./... && go mod tidy -diff"; \
	  (cd $$m && $(GO) vet ./... && $(GO) mod tidy -diff) || exit 1; \
	done

## golden: rewrite the golden transcripts; review the diff before committing
golden:
	$(GO) test ./... -update

## build: the binaries, into bin/, stamped with the version and commit
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/ ./cmd/... ./fakes/cmd/...

## fakes: run the fake Open-Meteo at 127.0.0.1:8090, FAKES_PORT=9090 for another port (see docs/weather.md; docs/providers.md for the model fakes)
FAKES_PORT ?= 8090
fakes:
	$(GO) run ./fakes/cmd/fakes openmeteo -addr 127.0.0.1:$(FAKES_PORT)

## bench-compare: the service against the fake upstream alone and on its fake model (SQLite, PostgreSQL), one table (a few minutes; BENCH_FLAGS adds flags)
bench-compare:
	$(GO) run ./tools/benchcompare $(BENCH_FLAGS)

## bench-streams: STREAMS (10000) streams open at once on the fake model, a token every STREAM_TOKEN_DELAY (1s): errors and memory per stream
STREAMS ?= 10000
STREAM_TOKEN_DELAY ?= 1s
bench-streams:
	$(GO) run ./tools/benchcompare -streams $(STREAMS) -stream-token-delay $(STREAM_TOKEN_DELAY) $(BENCH_FLAGS)

## bench-recall: the memory search on a generated recall set (personas, sessions, labelled questions), next to plain BM25; SQLite and PostgreSQL (BENCH_FLAGS adds flags)
bench-recall:
	$(GO) run ./tools/benchrecall $(BENCH_FLAGS)

## eval-safety: the crisis detector on its held-out sets: recall and false trips per kind, misses listed; fails under the targets
## (recall 0.95, false trips 0.05, the sets together); EVAL_SAFETY_FLAGS adds
## -set FILE (another set, same format), -guard-url URL -guard-model NAME -guard-key KEY (a moderation endpoint as second opinion)
eval-safety:
	$(GO) run ./tools/evalsafety -guard-fake -min-recall 0.95 -max-false-trips 0.05 $(EVAL_SAFETY_FLAGS)

## load: the k6 scripts (deploy/k6; k6 built into bin/ when missing) against a local service on the fake model
load:
	bash deploy/k6/run

## load-smoke: the same for about 20 seconds with 2 users each; fails when a threshold fails
load-smoke:
	bash deploy/k6/run smoke

## up: the whole stack in containers (deploy/compose.yaml): the service on PostgreSQL and Redis, Prometheus,
## Grafana, the OpenTelemetry Collector and Jaeger; needs Docker with Compose v2
up:
	COMPANION_VERSION=$(VERSION) COMPANION_COMMIT=$(COMMIT) docker compose -f deploy/compose.yaml up -d --build --wait
	@echo 'companion   http://127.0.0.1:4111'
	@echo 'Grafana     http://127.0.0.1:3000   (the Companion dashboard; Traces link at its top)'
	@echo 'Prometheus  http://127.0.0.1:9090'
	@echo 'Jaeger      http://127.0.0.1:16686'

## down: stop the stack and remove its containers; its data volumes stay (docker compose -f deploy/compose.yaml down -v removes them)
down:
	docker compose -f deploy/compose.yaml down

## help: this list: every target with a `## target: what it does` line above it
help:
	@echo 'make <target>, where <target> is one of:'
	@awk '/^## [A-Za-z0-9_.-]+:/ { sub(/^## /, ""); i = index($$0, ":"); \
	    printf "  %-14s %s\n", substr($$0, 1, i - 1), substr($$0, i + 2); next } \
	  /^## / { sub(/^## /, ""); printf "  %-14s %s\n", "", $$0 }' $(MAKEFILE_LIST)
