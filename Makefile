# reactgen: `make run` runs the offline demo end to end, `make test` runs every test.
GO      ?= go
BIN     := bin/reactgen
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build run test test-short race bench bench-index bench-index-1m bench-generate bench-export vet clean demo-world

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/reactgen

# The offline end-to-end run: index the demo corpus, generate with the expert policy,
# filter, export. No network, no API key. Running it again resumes and changes nothing.
run: build
	$(BIN) run --config configs/demo.yaml --out runs/demo

test:
	$(GO) test -count=1 -timeout 20m ./...

test-short:
	$(GO) test -short -count=1 ./...

race:
	$(GO) test -race -short -count=1 ./...

vet:
	$(GO) vet ./...

# Regenerate the committed demo world (data/demo) from its seed.
demo-world: build
	$(BIN) demo-world --out data/demo --seed 1

# Benchmarks: figures are written down in BENCHMARKS.md with these commands.
bench: bench-generate bench-export
	$(GO) test -run '^$$' -bench . -benchtime 1x ./filter/... ./internal/sentence/...

BENCH_PAGES ?= 1000000
bench-index:
	REACTGEN_BENCH_PAGES=$(BENCH_PAGES) $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./internal/index/

# The full-scale index figures (build speed, peak RSS, size, latency percentiles) on a
# synthetic corpus of BENCH_PAGES pages written to /tmp.
bench-index-1m:
	$(GO) build -o bin/synthcorpus ./internal/synthcorpus
	/usr/bin/time -v bin/synthcorpus -pages $(BENCH_PAGES) -out /tmp/reactgen-synth.jsonl -index /tmp/reactgen-synth-index -queries 5000

bench-generate:
	$(GO) test -run '^$$' -bench BenchmarkScheduler -benchtime 1x -timeout 30m ./generate/

BENCH_EPISODES ?= 100000
bench-export:
	EXPORT_BENCH_EPISODES=$(BENCH_EPISODES) $(GO) test -run '^$$' -bench 'Export$$' -benchtime 1x -timeout 30m ./export/

clean:
	rm -rf bin runs
