# baton — see README.md. `make help` lists the targets.

GO       ?= go
STORE    ?= var/baton.db
NODE_DIR := infra/local
BIN      := bin

.DEFAULT_GOAL := help
.PHONY: help build run test lint bench chaos emulators clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build the operator CLI into bin/baton
	$(GO) build -o $(BIN)/baton ./cmd/baton

run: build ## one tick of the reference job end to end on the embedded store
	./$(BIN)/baton run --once --store $(STORE)

emulators: $(NODE_DIR)/node_modules/.installed ## install the DynamoDB and SQS test servers (npm ci)

$(NODE_DIR)/node_modules/.installed: $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && npm ci --no-audit --no-fund
	touch $@

test: emulators ## vet, the no-AWS-in-core check and every test (emulators included)
	$(GO) mod download
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 12m ./...

lint: ## go vet and the check that the core imports no AWS package
	$(GO) vet ./...
	$(GO) test -count=1 -run 'TestCoreImportsNoAWS' ./internal/archtest

bench: emulators ## benchmarks on both backends, each figure beside its reference (about 20 minutes)
	$(GO) test -c -o $(BIN)/bench.test ./internal/bench
	./$(BIN)/bench.test -test.run '^TestReport$$' -test.timeout 120m -report -report.out $(BIN)/bench.md

chaos: emulators ## the long chaos suite on both backends, printing its table (a few minutes)
	$(GO) test -count=1 -timeout 30m -v -run '^TestChaos$$' ./internal/chaos -chaos.long

clean: ## remove build output and the local store
	rm -rf $(BIN) var .aws-sam

# Lambda build targets used by `sam build` (Metadata.BuildMethod: makefile).
-include functions/lambda.mk
