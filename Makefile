# The README's two commands are `make run` and `make test`.
GO ?= go

.PHONY: run test services golden check build fakes bench-compare bench-streams load load-smoke

## run: serve the API on its embedded defaults (fake model) at 127.0.0.1:4111
run:
	$(GO) run ./cmd/companion serve

## test: the whole suite, with the race detector, as CI runs it
test: services check
	$(GO) test -race -count=1 ./...

## services: PostgreSQL, Redis, Node (with the client packages), Chromium and Prometheus for the tests that use them
## (started or installed when missing; outside CI a failure only skips those tests)
services:
	@bash .ci/postgres || { [ "$$CI" != true ] && echo "PostgreSQL is not available: the tests that need it will be skipped"; }
	@bash .ci/redis || { [ "$$CI" != true ] && echo "Redis is not available: the tests that need it will be skipped"; }
	@bash .ci/node || { [ "$$CI" != true ] && echo "Node is not available: the client tests will be skipped"; }
	@bash .ci/browser || { [ "$$CI" != true ] && echo "Chromium is not available: the browser test of the web chat will be skipped"; }
	@bash .ci/prometheus || { [ "$$CI" != true ] && echo "Prometheus is not available: the tests that need it will be skipped"; }

## check: formatting, vet and a tidy go.mod
check:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	  if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod tidy -diff

## golden: rewrite the golden transcripts; review the diff before committing
golden:
	$(GO) test ./... -update

## build: the binaries, into bin/
build:
	$(GO) build -o bin/ ./cmd/... ./fakes/cmd/...

## fakes: run the fake Open-Meteo for local use (see docs/weather.md; docs/providers.md for the model fakes)
fakes:
	$(GO) run ./fakes/cmd/fakes openmeteo -addr 127.0.0.1:8090

## bench-compare: the service against the fake upstream alone and on its fake model (SQLite, PostgreSQL), one table (a few minutes; BENCH_FLAGS adds flags)
bench-compare:
	$(GO) run ./tools/benchcompare $(BENCH_FLAGS)

## bench-streams: STREAMS (10000) streams open at once on the fake model, a token every STREAM_TOKEN_DELAY (1s): errors and memory per stream
STREAMS ?= 10000
STREAM_TOKEN_DELAY ?= 1s
bench-streams:
	$(GO) run ./tools/benchcompare -streams $(STREAMS) -stream-token-delay $(STREAM_TOKEN_DELAY) $(BENCH_FLAGS)

## load: the k6 scripts (deploy/k6; k6 built into bin/ when missing) against a local service on the fake model
load:
	bash deploy/k6/run

## load-smoke: the same for about 20 seconds with 2 users each; fails when a threshold fails
load-smoke:
	bash deploy/k6/run smoke
