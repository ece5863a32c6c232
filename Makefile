# flare-slurm build, test and review targets. `make test` is what CI runs.
GO      ?= go
BIN     ?= bin/flare-slurm
# Packages that hold goldie golden files (they accept -update).
GOLDEN_PKGS ?= ./generator/...

.PHONY: build test test-unit test-slurm golden bench demo lint fuzz clean

build:
	$(GO) build -o $(BIN) ./cmd/flare-slurm

lint:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi

test-unit:
	$(GO) test -count=1 ./...

test: lint test-unit

golden:
	$(GO) test -count=1 $(GOLDEN_PKGS) -run . -update
	UPDATE_SCRIPTS=1 $(GO) test -count=1 ./cmd/flare-slurm -run TestScripts

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

demo: build
	@out=$$(mktemp -d); trap 'rm -rf "$$out"' EXIT; \
	./$(BIN) prepare examples/site-1 --config examples/slurm.yaml --output "$$out/site-1" && \
	echo "--- workspace $$out/site-1:" && (cd "$$out/site-1" && find . -type f | sort) && \
	echo "--- startup/start_slurm.sh:" && cat "$$out/site-1/startup/start_slurm.sh"

clean:
	rm -rf bin
