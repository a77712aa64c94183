# Lambda build targets for `sam build` (template.yaml: Metadata.BuildMethod:
# makefile, CodeUri: .). sam sets ARTIFACTS_DIR; each target leaves the
# function's `bootstrap` there for the provided.al2023 runtime on arm64.
# Included by the root Makefile.

GO ?= go
LAMBDA_GOENV   := GOOS=linux GOARCH=arm64 CGO_ENABLED=0
LAMBDA_GOFLAGS := -tags lambda.norpc -trimpath -ldflags='-s -w'

.PHONY: build-CoordinatorFunction build-ConsumerFunction

build-CoordinatorFunction: ## (sam build) the coordinator's bootstrap into $(ARTIFACTS_DIR)
	$(LAMBDA_GOENV) $(GO) build $(LAMBDA_GOFLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/coordinator

build-ConsumerFunction: ## (sam build) the consumer's bootstrap into $(ARTIFACTS_DIR)
	$(LAMBDA_GOENV) $(GO) build $(LAMBDA_GOFLAGS) -o $(ARTIFACTS_DIR)/bootstrap ./functions/consumer
