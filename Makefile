# flare-slurm build, test and review targets. `make test` is what CI runs.
GO      ?= go
BIN     ?= bin/flare-slurm
# Packages whose golden_test.go files read golden/ (through golden.Dir;
# they accept -update).
GOLDEN_PKGS ?= ./generator/... ./schema

.PHONY: editor-deps build test test-unit test-release test-slurm golden golden-scripts bench bench-process bench-federation demo lint fuzz clean docs dist notices

# The project's own single-machine Slurm cluster (runtime/slurmtest/README.md).
SLURM_CLUSTER ?= runtime/slurmtest/cluster.sh

# build makes the static binary a release ships (CGO_ENABLED=0, as make
# dist): Go's own resolver and user lookup, no libc to match on the nodes,
# and the tests run the binary a site runs (docs/install.md).
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/flare-slurm

lint:
	$(GO) vet ./...
	$(GO) vet -tags gendocs ./cmd/flare-slurm
	$(GO) vet -tags release ./cmd/flare-slurm
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi

test-unit: editor-deps
	$(GO) test -count=1 ./...

# test-release runs the slow release checks, built only with -tags release
# so that a plain `go test ./...` leaves them out: TestDist (make dist twice,
# byte-identical artefacts) and TestGoInstallFromModuleProxy (go install
# ...@VERSION through a local module proxy). make test runs them after the
# other tests, on every path (FLARE_SLURM_IT=0 too).
RELEASE_TESTS ?= ^(TestDist|TestGoInstallFromModuleProxy)$$
test-release:
	$(GO) test -count=1 -tags release -run '$(RELEASE_TESTS)' ./cmd/flare-slurm

# editor-deps installs yaml-language-server, pinned by
# internal/editortest/testdata/package-lock.json, for internal/editortest
# (completion, hover and diagnostics on the schemas in a real editor engine).
# It runs npm ci only when the lock file is newer than the install. Without
# npm it says so, and the editor tests are skipped (they fail under CI=true).
EDITOR_DEPS := internal/editortest/testdata
editor-deps:
	@if command -v npm >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory $(EDITOR_DEPS)/node_modules/.package-lock.json; \
	else echo "make: npm is not installed; internal/editortest's editor tests are skipped"; fi

$(EDITOR_DEPS)/node_modules/.package-lock.json: $(EDITOR_DEPS)/package-lock.json $(EDITOR_DEPS)/package.json
	cd $(EDITOR_DEPS) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# make test runs the Slurm tier too when this machine can start the cluster
# (root, apt or debootstrap, and its ports 6817-6819 and 3306 free or held by
# its own daemons); in CI (CI=true) it always does, and a cluster that fails
# to start (a port in use included) fails the run. Elsewhere it says why the
# tier is skipped. FLARE_SLURM_IT=0 skips the tier anywhere (the opt-out);
# make test-unit is every test but that tier.
test: lint
	@if [ "$${FLARE_SLURM_IT:-}" = 0 ]; then \
		echo "make test: FLARE_SLURM_IT=0; Slurm integration tests are skipped"; \
		$(MAKE) --no-print-directory test-unit; \
	elif [ "$${CI:-}" = true ] || bash $(SLURM_CLUSTER) can-run >/dev/null 2>&1; then \
		$(MAKE) --no-print-directory test-slurm; \
	else \
		echo "make test: $$(bash $(SLURM_CLUSTER) can-run 2>&1); Slurm integration tests are skipped"; \
		$(MAKE) --no-print-directory test-unit; \
	fi
	@$(MAKE) --no-print-directory test-release

# test-slurm runs the Slurm version matrix: for each of SLURM_VERSIONS
# (cluster.sh versions: 24.11, then 26.05) it starts that version's cluster
# (stopping whichever runs), runs the tests with the integration tier
# enabled and FLARE_SLURM_VERSION set, and at the end stops the cluster
# (KEEP_SLURM=1 leaves the last one running). The first version runs the
# whole suite, every other one the tier's packages (SLURM_TIER_PKGS: every
# package with a test that uses runtime/slurmtest; a test keeps the list
# complete). It prints progress as it goes (each top-level test's result
# and each package's line); the full verbose log of a version is
# SLURM_LOG-VERSION.log, whose failing tests are printed at the end.
# `make test-slurm SLURM_VERSIONS=26.05` runs one version.
SLURM_VERSIONS ?= $(shell bash $(SLURM_CLUSTER) versions)
SLURM_TIER_PKGS ?= ./runtime/integration/... ./runtime/slurmtest/... ./internal/slurmenv/...
SLURM_LOG ?= bin/test-slurm
test-slurm: editor-deps
	@mkdir -p $(dir $(SLURM_LOG)); rc=0; pkgs=./...; \
	for v in $(SLURM_VERSIONS); do \
		log=$(SLURM_LOG)-$$v.log; \
		echo "make test-slurm: Slurm $$v: $$pkgs"; \
		bash $(SLURM_CLUSTER) down >/dev/null 2>&1 || true; \
		if ! FLARE_SLURM_VERSION=$$v bash $(SLURM_CLUSTER) up; then \
			echo "make test-slurm: the Slurm $$v cluster did not start"; rc=1; pkgs="$(SLURM_TIER_PKGS)"; continue; fi; \
		{ FLARE_SLURM_VERSION=$$v FLARE_SLURM_IT=1 $(GO) test -count=1 -timeout 40m -v $$pkgs 2>&1; echo "go test exit $$?"; } | tee $$log | \
			grep --line-buffered -E '^(--- (PASS|FAIL|SKIP): Test|ok |FAIL|panic:|go test exit)'; \
		grep -q '^go test exit 0$$' $$log || { rc=1; echo "make test-slurm: Slurm $$v failed; the failing tests (full log: $$log):"; \
			awk '/^=== RUN/{buf=""} {buf=buf $$0 "\n"} /^--- FAIL/{printf "%s", buf; buf=""}' $$log | tail -n 400; }; \
		pkgs="$(SLURM_TIER_PKGS)"; \
	done; \
	if [ -z "$(KEEP_SLURM)" ]; then bash $(SLURM_CLUSTER) down || rc=1; fi; exit $$rc

# golden rewrites the golden files from the templates and runs nothing
# else, so it succeeds after any template edit (make test then checks the
# rendered scripts). Only tests named TestGolden* run (TestMakeGolden pins
# it). The CLI scripts' expected outputs are rewritten by golden-scripts.
GOLDEN_RUN ?= ^TestGolden
golden:
	$(GO) test -count=1 $(GOLDEN_PKGS) -run '$(GOLDEN_RUN)' -update

golden-scripts:
	UPDATE_SCRIPTS=1 $(GO) test -count=1 ./cmd/flare-slurm -run TestScripts

bench:
	$(GO) test -p 1 -run '^$$' -bench . -benchmem ./...

# bench-process prints issue 18's whole-process figures as one table:
# prepare vs NVFlare's deploy prepare, version and validate vs a Go
# hello-world, a 10,000-file kit vs NVFlare and cp -a + sync -f (paired runs,
# median of per-pair ratios, load average with each row). NVFlare runs from
# NVFLARE_SRC (default ../shared/nvflare) with NVFLARE_PYTHON and
# NVFLARE_PYTHONPATH; BENCH_FLAGS=-large=false skips the 200 MiB kit.
bench-process:
	$(GO) run ./internal/benchprocess $(BENCH_FLAGS)

# bench-federation (issue 27) runs one provisioned NVFlare federation on the
# test cluster twice over: its kits prepared with NVFlare's own Slurm
# launcher and with --launcher flare-slurm, the same hello-numpy-based job
# submitted 1, 10 and 50 times at once to each (runtime/integration's
# TestFederationBenchmark; its figures are the package's fedbench_*_test.go).
# It writes the table and the JSON result into BENCH_FEDERATION_DOC
# (docs/performance.md, between its markers) and every per-second sample into
# BENCH_FEDERATION_JSON; the test's log is BENCH_FEDERATION_LOG. It needs what make test-slurm needs (root; it
# starts the cluster of FLARE_SLURM_VERSION when none runs, and refuses when
# another version's runs: set FLARE_SLURM_VERSION to that one) and holds the
# cluster alone while it runs, about 13 minutes on the 2-core machine.
# FLARE_SLURM_BENCH_SIZES=1,10 (and _POLL, _ROUNDS, _TRAIN) change its shape.
BENCH_FEDERATION_DOC  ?= docs/performance.md
BENCH_FEDERATION_JSON ?= bin/bench-federation.json
BENCH_FEDERATION_LOG  ?= bin/bench-federation.log
bench-federation:
	@mkdir -p $(dir $(BENCH_FEDERATION_JSON)) $(dir $(BENCH_FEDERATION_LOG))
	@{ FLARE_SLURM_IT=1 FLARE_SLURM_BENCH_FEDERATION=$(abspath $(BENCH_FEDERATION_DOC)) \
		FLARE_SLURM_BENCH_JSON=$(abspath $(BENCH_FEDERATION_JSON)) \
		$(GO) test -count=1 -timeout 20m -run '^TestFederationBenchmark$$' -v ./runtime/integration/ 2>&1; \
		echo "go test exit $$?"; } | tee $(BENCH_FEDERATION_LOG) | \
		grep --line-buffered -E 'federation_bench_test|^(--- |ok |FAIL|panic:|go test exit)'; \
	grep -q '^go test exit 0$$' $(BENCH_FEDERATION_LOG)

# demo prepares the example client kit into DEMO_DIR (default: a new temp
# directory) and prints it; the workspace is kept, and the last line says
# where it is. The example's apptainer image path does not exist here, so
# the demo points it at an empty stand-in image inside DEMO_DIR. Running it
# again with the same DEMO_DIR re-prepares that workspace.
DEMO_DIR ?=
demo: build
	@set -e; dir="$(DEMO_DIR)"; \
	if [ -z "$$dir" ]; then dir=$$(mktemp -d "$${TMPDIR:-/tmp}/flare-slurm-demo.XXXXXX"); else mkdir -p "$$dir"; fi; \
	dir=$$(cd "$$dir" && pwd); \
	: > "$$dir/nvflare-demo.sif"; \
	sed "s|^  image: .*|  image: $$dir/nvflare-demo.sif|" examples/slurm.yaml > "$$dir/slurm.yaml"; \
	"$(BIN)" prepare examples/site-1 --config "$$dir/slurm.yaml" --output "$$dir/site-1"; \
	echo "--- workspace $$dir/site-1:"; (cd "$$dir/site-1" && find . -type f | sort); \
	echo "--- startup/start_slurm.sh:"; cat "$$dir/site-1/startup/start_slurm.sh"; \
	echo "--- startup/parent.slurm:"; cat "$$dir/site-1/startup/parent.slurm"; \
	echo "--- make demo: the workspace is kept in $$dir/site-1 (remove it with: rm -rf '$$dir')"

# fuzz runs each parser's fuzz target for FUZZTIME.
FUZZTIME ?= 20s
fuzz:
	for f in FuzzParseSlurmConfig FuzzParseStudyRuntime FuzzParseJobMeta FuzzCertSubject; do \
		$(GO) test ./schema -run '^$$$$' -fuzz "^$$f$$$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 1s || exit 1; done
	for f in FuzzParseQueue FuzzParseAccounting FuzzParseSubmit; do \
		$(GO) test ./runtime/scheduler -run '^$$$$' -fuzz "^$$f$$$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 1s || exit 1; done

# docs renders the command reference from the command tree of the working
# tree: docs/cli/*.md (committed; a test fails when they are stale) and the
# man pages into MANDIR. The generator is the CLI built with -tags gendocs,
# which adds a hidden docs command; the flare-slurm binary itself does not
# link the renderers. Man pages are dated by the last commit.
DOCGEN ?= bin/flare-slurm-docgen
MANDIR ?= bin/man/man1
docs:
	$(GO) build -tags gendocs -o $(DOCGEN) ./cmd/flare-slurm
	SOURCE_DATE_EPOCH=$${SOURCE_DATE_EPOCH:-$$(git log -1 --format=%ct 2>/dev/null || date +%s)} \
		./$(DOCGEN) docs --markdown docs/cli --man $(MANDIR)

# notices rewrites THIRD_PARTY_NOTICES, the license texts of every module
# linked into the binary (read from its build information, as go version
# -m prints it) and of Go's standard library; make dist ships it with
# LICENSE. internal/notices' test fails when it is stale.
notices:
	$(GO) run ./internal/notices/gen > THIRD_PARTY_NOTICES.tmp && mv THIRD_PARTY_NOTICES.tmp THIRD_PARTY_NOTICES

# dist builds the release artefacts of the last commit into DIST (see
# docs/install.md): per platform a static binary flare-slurm-OS-ARCH and a
# tarball flare-slurm-OS-ARCH.tar.gz (bin/, share/man/man1, shell
# completions), and SHA256SUMS. Two runs give byte-identical files:
# - the build is a fresh clone of HEAD (uncommitted changes are left out,
#   and Go stamps the commit, which it cannot do in a git worktree);
# - CGO_ENABLED=0 (static, no libc), -trimpath (no build paths),
#   -buildvcs=true (revision, commit time and modified=false are recorded:
#   `flare-slurm version` names the commit), -ldflags '-s -w' (no symbol
#   table or DWARF: a third smaller; panics still print stack traces);
#   no -X: the toolchain derives the version from the commit's tags;
# - the CPU baselines are pinned (GOAMD64=v1, GOARM64=v8.0, GOPPC64=power8),
#   so the environment cannot change the code generated;
# - LICENSE and THIRD_PARTY_NOTICES (make notices) go beside the binaries
#   and into each tarball's share/doc/flare-slurm/;
# - man pages and every tarball entry are dated by the commit time
#   (SOURCE_DATE_EPOCH), owned by 0:0, sorted, modes u=rwX,go=rX;
#   gzip -n stores no name or time.
# The same Go release is needed to reproduce the bytes: version prints it.
DIST      ?= dist
PLATFORMS ?= linux/amd64 linux/arm64 linux/ppc64le
DIST_GOFLAGS = -trimpath -buildvcs=true -ldflags='-s -w'
dist:
	@set -eu; export LC_ALL=C TZ=UTC CGO_ENABLED=0 GOAMD64=v1 GOARM64=v8.0 GOPPC64=power8; \
	commit=$$(git rev-parse --verify -q HEAD) || { echo "make dist: error: not a git checkout with a commit; build with go build (docs/install.md)" >&2; exit 1; }; \
	if [ -n "$$(git status --porcelain)" ]; then echo "make dist: note: uncommitted changes are left out: the artefacts are commit $$commit" >&2; fi; \
	export SOURCE_DATE_EPOCH=$$(git log -1 --format=%ct "$$commit"); \
	out=$(abspath $(DIST)); rm -rf "$$out"; mkdir -p "$$out"; \
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	git clone --quiet --no-checkout . "$$tmp/src"; \
	git -C "$$tmp/src" -c advice.detachedHead=false checkout --quiet "$$commit"; \
	cd "$$tmp/src"; \
	$(GO) build $(DIST_GOFLAGS) -tags gendocs -o "$$tmp/docgen" ./cmd/flare-slurm; \
	share="$$tmp/share"; mkdir -p "$$share/man/man1" "$$share/bash-completion/completions" \
		"$$share/zsh/site-functions" "$$share/fish/vendor_completions.d" "$$share/doc/flare-slurm"; \
	cp LICENSE THIRD_PARTY_NOTICES "$$share/doc/flare-slurm/"; cp LICENSE THIRD_PARTY_NOTICES "$$out/"; \
	"$$tmp/docgen" docs --man "$$share/man/man1" >/dev/null; \
	"$$tmp/docgen" completion bash > "$$share/bash-completion/completions/flare-slurm"; \
	"$$tmp/docgen" completion zsh > "$$share/zsh/site-functions/_flare-slurm"; \
	"$$tmp/docgen" completion fish > "$$share/fish/vendor_completions.d/flare-slurm.fish"; \
	for p in $(PLATFORMS); do \
		name=flare-slurm-$${p%/*}-$${p#*/}; \
		GOOS=$${p%/*} GOARCH=$${p#*/} $(GO) build $(DIST_GOFLAGS) -o "$$out/$$name" ./cmd/flare-slurm; \
		chmod 0755 "$$out/$$name"; \
		mkdir -p "$$tmp/stage/$$name/bin"; cp "$$out/$$name" "$$tmp/stage/$$name/bin/flare-slurm"; \
		cp -R "$$share" "$$tmp/stage/$$name/share"; \
		tar --create --format=ustar --sort=name --mtime="@$$SOURCE_DATE_EPOCH" --owner=0 --group=0 \
			--numeric-owner --mode=u=rwX,go=rX -C "$$tmp/stage" "$$name" | gzip -9 -n > "$$out/$$name.tar.gz"; \
	done; \
	cd "$$out"; sha256sum LICENSE THIRD_PARTY_NOTICES flare-slurm-* > SHA256SUMS; chmod 0644 SHA256SUMS LICENSE THIRD_PARTY_NOTICES ./*.tar.gz; \
	echo "make dist: $$(ls | wc -l) files of commit $$commit in $(DIST)"

clean:
	rm -rf bin dist
