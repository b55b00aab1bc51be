# reactgen: `make run` runs the offline demo end to end, `make test` runs every test.
GO      ?= go
BIN     := bin/reactgen
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: build run test jsdeps test-short race bench bench-index bench-index-1m bench-generate bench-export vet clean demo-world chromium report report-screenshot eval

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/reactgen

# The offline end-to-end run: index the demo corpus, generate with the expert policy,
# filter, export. No network, no API key. Running it again resumes and changes nothing.
run: build
	$(BIN) run --config configs/demo.yaml --out runs/demo

test: jsdeps
	$(GO) test -count=1 -timeout 20m ./...

# The independent readers some tests compare against (js-tiktoken, apache-arrow, DuckDB,
# hyparquet, @huggingface/jinja; jscheck/package-lock.json pins them; a changed lock
# file reinstalls them). Without npm those tests skip. The chat-template tests also render
# with Python's Jinja2 (jscheck/render.py) where python3-jinja2 is installed (Debian:
# apt-get install python3-jinja2), and say so where it is not.
jsdeps:
	@if command -v npm >/dev/null 2>&1; then \
		[ jscheck/node_modules/.package-lock.json -nt jscheck/package-lock.json ] || npm ci --prefix jscheck --no-audit --no-fund --loglevel=error; \
	else echo "npm not found: the tests that read exports with JavaScript readers will skip"; fi

test-short:
	$(GO) test -short -count=1 ./...

race:
	$(GO) test -race -short -count=1 ./...

vet:
	$(GO) vet ./...

# Regenerate the committed demo world (data/demo) from its seed.
demo-world: build
	$(BIN) demo-world --out data/demo --seed 1

# Benchmarks: figures are written down in BENCHMARKS.md with these commands. Each
# prints CPU time (user+sys) beside wall time and the load average: on a shared machine
# CPU time is the figure to compare. `make bench` ends with issue 25's three figures in
# one table (internal/benchmeter/benchsummary): CallCPU's CPU-µs/call (generate, client
# only, at 16, 64 and 256 in flight), BenchmarkExport's filter-cpu-s/op and
# export-cpu-s/op (BENCH_EPISODES episodes, BENCH_FORMATS formats). The whole output is
# kept in $(BENCH_LOG).
BENCH_LOG ?= bin/bench.txt
bench:
	@mkdir -p $(dir $(BENCH_LOG))
	@bash -o pipefail -c '{ $(MAKE) --no-print-directory bench-generate bench-export && uptime && \
		$(GO) test -run "^$$" -bench . -benchtime 1x ./filter/... ./internal/sentence/...; } 2>&1 | tee $(BENCH_LOG)'
	@echo; $(GO) run ./internal/benchmeter/benchsummary < $(BENCH_LOG)

BENCH_PAGES ?= 1000000
bench-index:
	REACTGEN_BENCH_PAGES=$(BENCH_PAGES) $(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./index/

# The full-scale index figures (build speed, peak RSS, size, latency percentiles) on a
# synthetic corpus of BENCH_PAGES pages written to /tmp.
bench-index-1m:
	$(GO) build -o bin/synthcorpus ./index/synthcorpus
	/usr/bin/time -v bin/synthcorpus -pages $(BENCH_PAGES) -out /tmp/reactgen-synth.jsonl -index /tmp/reactgen-synth-index -queries 5000

# BenchmarkScheduler (episodes/s against the ideal) and BenchmarkCallCPU (the client's
# CPU per model call at 16, 64 and 256 in flight, the fake server in another process).
bench-generate:
	@uptime
	$(GO) test -run '^$$' -bench 'BenchmarkScheduler|BenchmarkCallCPU' -benchtime 1x -timeout 30m ./generate/

BENCH_EPISODES ?= 100000
BENCH_FORMATS  ?= all
bench-export:
	@uptime
	EXPORT_BENCH_EPISODES=$(BENCH_EPISODES) EXPORT_BENCH_FORMATS=$(BENCH_FORMATS) $(GO) test -run '^$$' -bench 'Export$$' -benchtime 1x -timeout 30m ./export/

# `reactgen eval` on the demo world with a fake "fine-tuned" model (the expert policy
# behind an OpenAI-compatible test server on 127.0.0.1) answering in the trained layout:
# prints the table for the trained and the few-shot layout, chat and completion, and
# checks that both layouts give every question the same answer.
eval:
	$(GO) test -count=1 -run '^TestEvalTrainedDemo$$' -v ./cmd/reactgen/ | grep -v '^=== RUN'

# Debian's Chromium, for the report's browser test (report, skipped without it)
# and the screenshot below. Needs root and the Debian package mirror.
chromium:
	@test -x /usr/bin/chromium || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium; }

# The demo's method runs side by side: Table 1 on stdout, runs/report/report.html and
# runs/report/charts/*.svg. The runs it compares are its own (REPORT_RUNS), never
# runs/demo, so a user's own work there (another export, another filter) is left alone.
REPORT_RUNS := runs/report-runs/react runs/report-runs/act runs/report-runs/fever
report: build
	$(BIN) run --config configs/demo.yaml --out runs/report-runs/react
	$(BIN) run --config configs/demo.yaml --out runs/report-runs/act --set generate.method=act
	$(BIN) run --config configs/demo-fever.yaml --out runs/report-runs/fever
	$(BIN) compare $(REPORT_RUNS) --out runs/report

# A PNG of the report as headless Chromium renders it, runs/report/report.png, and each
# chart as runs/report/charts/<name>.png.
CHROMIUM_FLAGS := --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	--disable-background-networking --disable-component-update --disable-sync --hide-scrollbars
report-screenshot: report chromium
	$(BIN) compare $(REPORT_RUNS) --out runs/report --png >/dev/null
	profile=$$(mktemp -d) && /usr/bin/chromium $(CHROMIUM_FLAGS) --user-data-dir=$$profile --window-size=1000,3200 \
		--screenshot=runs/report/report.png file://$(CURDIR)/runs/report/report.html 2>/dev/null; rm -rf $$profile
	@ls -l runs/report/report.png

clean:
	rm -rf bin runs
