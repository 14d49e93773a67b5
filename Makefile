# Signet: `make run` starts the whole local stack; `make test` runs every test against one.
.PHONY: run test build bench down deps

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
