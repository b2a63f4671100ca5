# rlock: the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
MODULE := target/release/librlock.so
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: help deps build run test bench clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

deps: ## Install what a fresh Debian machine lacks (redis-server, libclang for bindgen)
	@missing=""; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || missing="$$missing libclang-dev"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $$missing; \
	fi

build: deps ## Build target/release/librlock.so
	$(CARGO) build --release --lib

run: build ## Build, then start redis-server with the module on redis.conf.example (port 6379)
	redis-server redis.conf.example

test: build ## Run every test: unit tests, then integration tests against real redis-server
	$(CARGO) test --release

bench: build ## Benchmark RLOCK against the Redisson scripts and SET NX PX (table + target/bench.json)
	$(CARGO) bench --bench lockbench

clean: ## Remove build output
	$(CARGO) clean
