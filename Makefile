# baton — see README.md. `make help` lists the targets.

GO       ?= go
STORE    ?= var/baton.db
NODE_DIR := infra/local
BIN      := bin
# pipefail: a build piped into its progress counter still fails the target.
SHELL       := /bin/bash
.SHELLFLAGS := -o pipefail -c

.DEFAULT_GOAL := help
.PHONY: help build run test lint bench bench-million chaos emulators postgres browser screenshots clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build the operator CLI into bin/baton
	@echo "building $(BIN)/baton (the first build compiles every dependency: about a minute)"
	@$(GO) build -v -o $(BIN)/baton ./cmd/baton 2>&1 | awk '/ /{print; next} {n++; printf "\r  %d packages compiled", n; fflush()} END {if (n) printf "\n"}'
	@echo "built $(BIN)/baton; put it on PATH with: export PATH=\"$$PWD/$(BIN):\$$PATH\""

run: build ## one tick of the reference job end to end on the embedded store
	./$(BIN)/baton run --once --store $(STORE)

emulators: $(NODE_DIR)/node_modules/.installed ## install the DynamoDB and SQS test servers (npm ci)

$(NODE_DIR)/node_modules/.installed: $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund
	touch $@

postgres: ## check for the PostgreSQL server binaries the tests start (apt-get installs them when missing, as root)
	@sh $(NODE_DIR)/postgres.sh

# The browser test of `baton ui` (internal/ui) drives Debian's Chromium:
# installed here when it is missing and we are root, else explained. The
# test skips without a browser, and fails under CI=true.
browser: ## install Debian's chromium for the dashboard's browser test when missing (root only)
	@if [ -n "$$BATON_CHROMIUM" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
		:; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "installing chromium (Debian's package) for the browser test"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "no chromium: the browser test of internal/ui skips (fails under CI=true); install it with 'sudo apt-get install chromium' or point BATON_CHROMIUM at a Chromium"; \
	fi

screenshots: browser ## regenerate the dashboard guide's screenshot of a run's timeline (docs/ui-timeline.png)
	$(GO) test -count=1 -run '^TestBrowser$$' ./internal/ui -ui.readme $(CURDIR)/docs/ui-timeline.png

# The lab (lab/: the bench, the throttling proxy, the call counts) is a
# module of its own, so that baton's go.mod needs none of its dependencies
# (River): test and lint run in both modules.
test: emulators postgres browser ## vet, the no-AWS-in-core check and every test of baton's module and the lab's (emulators, a throwaway PostgreSQL and the browser included)
	$(GO) mod download
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 12m ./...
	cd lab && $(GO) mod download
	cd lab && $(GO) vet ./...
	cd lab && $(GO) test -count=1 -timeout 12m ./...

STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.7.0

lint: ## go vet, staticcheck (baton's module and the lab's) and the import rules (the core imports no AWS package; the CLI opens engines through the registry; nothing of baton's needs the lab)
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	cd lab && $(GO) vet ./...
	cd lab && $(GO) run $(STATICCHECK) ./...
	$(GO) test -count=1 -run 'TestCoreImportsNoAWS|TestCLIOpensEnginesThroughTheRegistry|TestMainModuleNeedsNoLab' ./internal/archtest

bench: emulators postgres ## benchmarks on every backend, each figure beside its reference (about 25 minutes)
	cd lab && $(GO) test -c -o $(CURDIR)/$(BIN)/bench.test ./bench
	./$(BIN)/bench.test -test.run '^TestReport$$' -test.timeout 120m -report -report.out $(BIN)/bench.md

bench-million: ## one run of 1,000,000 run-time items on the embedded store: time, heap, peak RSS (about 10 minutes)
	cd lab && $(GO) test -c -o $(CURDIR)/$(BIN)/bench.test ./bench
	./$(BIN)/bench.test -test.run '^TestRunTimeListMillion$$' -test.timeout 60m -million

chaos: emulators postgres ## the long chaos suite on every backend, printing its table (a few minutes)
	$(GO) test -count=1 -timeout 30m -v -run '^TestChaos$$' ./internal/chaos -chaos.long

clean: ## remove build output and the local store
	rm -rf $(BIN) var .aws-sam

# Lambda build targets used by `sam build` (Metadata.BuildMethod: makefile).
-include functions/lambda.mk
