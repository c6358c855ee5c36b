# Cellcast build and test entry points. `make test` is what CI runs.
GO ?= go
# An execution count, not a duration: Go 1.26's fuzz coordinator can fail
# a target with "context deadline exceeded" when a duration runs out
# (golang/go#75804, fixed in 1.27). 200k runs take 3-12 s per target here.
FUZZTIME ?= 200000x
# Whole requests through the HTTP and NATS paths write to a store: fewer.
SERVE_FUZZTIME ?= 20000x

.PHONY: build test vet tools unit peers browser demo-ui demo-perf race fuzz bench-lsm bench-broker bench-storage bench-pebble bench-index cluster-local cluster-local-external cluster-rolling

test: vet tools unit peers browser js race fuzz

# The broker and the cellcast command in .bin/, stamped with the commit
# they are built from (broker --version; this machine's Go defaults to
# -buildvcs=false).
build:
	$(GO) build -buildvcs=true -o $(CURDIR)/.bin/ ./cmd/broker ./cmd/cellcast

# A nats-server binary for the tests against an external NATS server, and
# staticcheck, pinned so that everyone sees the same lint.
TOOLS := $(CURDIR)/.tools
tools:
	GOBIN=$(TOOLS) $(GO) install github.com/nats-io/nats-server/v2@v2.15.2
	GOBIN=$(TOOLS) $(GO) install honnef.co/go/tools/cmd/staticcheck@v0.8.2

# A three-node cluster on loopback (docs/cluster.md); Ctrl-C stops it.
cluster-local:
	$(GO) build -o $(CURDIR)/.bin/broker ./cmd/broker
	scripts/cluster-local.sh $(CURDIR)/.bin/broker $(CURDIR)/data/cluster

# The same on three nats-server processes of their own (--nats-url).
cluster-local-external: tools
	$(GO) build -o $(CURDIR)/.bin/broker ./cmd/broker
	NATS_SERVER=$(TOOLS)/nats-server scripts/cluster-local.sh $(CURDIR)/.bin/broker $(CURDIR)/data/cluster-external

# A rolling restart of three nodes, growth to five, a kill -9 and a shrink
# back to three, each under load and checked for completeness
# (bench/cmd/failover).
cluster-rolling:
	$(GO) run ./bench/cmd/failover -rolling -load-rate 300 -step 15s

vet: tools
	$(GO) vet ./...
	$(TOOLS)/staticcheck ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi

unit:
	PATH="$(TOOLS):$$PATH" $(GO) test -count=1 ./...

# The nested module of peer stores: the Pebble-backed DualDB passes the
# same store tests as ours (short: a fifth of the differential test's
# operations; ours run them all in unit).
peers:
	cd bench/peers && $(GO) vet ./... && $(GO) test -count=1 -short ./...

# The demo page in headless Chromium against a real broker (a nested module,
# so the root one does not carry the browser driver). Installs the Debian
# package chromium when it is missing (as .ci/run does).
browser: tools
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium)
	cd demo/browsertest && $(GO) vet ./... && $(TOOLS)/staticcheck ./... && $(GO) test -count=1 ./...

# The JavaScript client (clients/js, docs/clients.md): its TypeScript
# declarations (tsc --noEmit), its bundle's gzipped size, and node --test
# against a real broker built from this tree (about a minute).
js:
	cd clients/js && npm ci --no-audit --no-fund && GO="$(GO)" npm test

# The demo page's bundle and map data, committed in demo/static so that the
# broker needs no Node.js: pinned by demo/ui/package-lock.json (the
# us-atlas and world-atlas outlines among them), rebuilt byte for byte.
demo-ui:
	cd demo/ui && npm ci --no-audit --no-fund && node data.mjs && node build.mjs

# Frames per second with 1,000 users and 50 incidents/s, load time and heap
# over a minute, in headless Chromium (docs/demo.md; about 2 minutes).
demo-perf:
	cd demo/browsertest && $(GO) test -count=1 -run TestDemoPerformance -demo.perf -v -timeout 10m ./...

# The concurrent engine code, and the stores driven from several goroutines,
# under the race detector (short mode keeps it quick).
race:
	$(GO) test -count=1 -race -short ./lsm/...
	$(GO) test -count=1 -race -short -run Concurrent ./dualdb ./twodb
	$(GO) test -count=1 -race -short ./delivery ./gateway ./broker ./client ./cluster

# Each decoder's fuzz target, briefly.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzReader$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./lsm/record
	$(GO) test -run '^$$' -fuzz '^FuzzBlock$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./lsm/sstable
	$(GO) test -run '^$$' -fuzz '^FuzzTable$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./lsm/sstable
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeEdit$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./lsm/internal/manifest
	$(GO) test -run '^$$' -fuzz '^FuzzBatch$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./lsm
	$(GO) test -run '^$$' -fuzz '^FuzzNotes$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./cluster
	$(GO) test -run '^$$' -fuzz '^FuzzReply$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./cluster
	$(GO) test -run '^$$' -fuzz '^FuzzGeoJSON$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./geo
	$(GO) test -run '^$$' -fuzz '^FuzzRequest$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./gateway
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeShape$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./geo
	$(GO) test -run '^$$' -fuzz '^FuzzRequest$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./cluster
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./dewey
	$(GO) test -run '^$$' -fuzz '^FuzzRequest$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./gateway
	$(GO) test -run '^$$' -fuzz '^FuzzServe$$' -fuzztime $(SERVE_FUZZTIME) -fuzzminimizetime 1s ./gateway
	$(GO) test -run '^$$' -fuzz '^FuzzFrame$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./gateway
	$(GO) test -run '^$$' -fuzz '^FuzzFragment$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./listdb
	$(GO) test -run '^$$' -fuzz '^FuzzTrace$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./bench/workload
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./secondary
	$(GO) test -run '^$$' -fuzz '^FuzzPublication$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./client
	$(GO) test -run '^$$' -fuzz '^FuzzNotification$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./client
	$(GO) test -run '^$$' -fuzz '^FuzzReply$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./client
	$(GO) test -run '^$$' -fuzz '^FuzzTime$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./client
	$(GO) test -run '^$$' -fuzz '^FuzzGroup$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./client
	$(GO) test -run '^$$' -fuzz '^FuzzGroupCBOR$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./client

# The storage engine benchmark against Pebble and goleveldb; prints the table
# that docs/lsm-benchmarks.md holds (about 10 minutes).
bench-lsm:
	cd bench/peers && $(GO) run ./cmd/dbbench -runs 2

# The thesis's storage experiments, Fig. 4.8–4.15 (docs/storage-benchmarks.md).
bench-storage:
	$(GO) run ./bench/cmd/pubsubbench -out bench-results

# The secondary-index study on every strategy (docs/secondary-indexes.md).
bench-index:
	$(GO) run ./bench/cmd/indexbench -out bench-results-index

# Our DualDB against DualDB's layout on Pebble (docs/benchmarks.md).
bench-pebble:
	cd bench/peers && $(GO) run ./cmd/pebblebench -out ../../bench-results-pebble

# The broker end to end: 10k and 100k moving users (docs/broker-benchmarks.md).
bench-broker:
	$(GO) run ./bench/cmd/brokerbench
	$(GO) run ./bench/cmd/brokerbench -subs 100000 -conns 100 -rate 50
