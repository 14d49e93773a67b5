# Signet: `make run` starts the whole local stack; `make test` runs every test against one.
.PHONY: run test build bench down deps fuzz fuzz-ci deploy-test

run:
	bash scripts/stack.sh run

test:
	bash scripts/stack.sh test

build:
	swift build

bench:
	bash scripts/bench.sh

down:
	bash scripts/stack.sh down

deps:
	bash scripts/stack.sh deps

# libFuzzer targets (Tools/Fuzz): FUZZ_SECONDS per target (default 60) and/or FUZZ_RUNS
# executions per target; prints executions, coverage and findings; fails on a finding.
fuzz:
	bash scripts/fuzz.sh build
	bash scripts/fuzz.sh replay
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_RUNS=$(FUZZ_RUNS) bash scripts/fuzz.sh run

# CI's pass: replay the corpus and regressions, then 5 s per target (about a minute in all).
fuzz-ci:
	$(MAKE) fuzz FUZZ_SECONDS=5

# The container checks of deploy/ (scripts/deploy-test.sh): images built with podman from the
# Debian mirror, the compose stack run with podman-compose, smoke tests through the gateway
# container. Installs podman & co. with apt; skips (exit 0, "SKIPPED") when it cannot.
deploy-test:
	bash scripts/deploy-test.sh
