#!/usr/bin/env bash
# Builds the Java client's jar, compiles its tests and runs them with JUnit 5's console launcher
# against real redis-server processes with the rlock module. Needs: default-jdk-headless and
# junit5, libassertj-core-java and libslf4j-java (Debian, for Redisson's own tests vendored in
# upstream/redisson), redis-server, openssl, and the built module (target/release/librlock.so, or
# RLOCK_MODULE). Arguments go to the console launcher (e.g. --select-class rlock.LockTest).
# `--build-only` builds the jar and the tests and stops; `--no-build` (first) runs what is built,
# so that several runs can go side by side (make test runs Redisson's classes in their own JVMs).
# Exit code: non-zero when the build, the jar check or any test fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$here/build"
module="${RLOCK_MODULE:-$root/target/release/librlock.so}"
junit="${JUNIT_CONSOLE:-/usr/share/java/junit-platform-console-standalone.jar}"

stage=all
case "${1:-}" in
  --build-only) stage=build; shift ;;
  --no-build) stage=run; shift ;;
esac

if [ ! -f "$module" ]; then
  echo "test.sh: $module is missing; building the module first" >&2
  (cd "$root" && make build)
fi
[ -f "$junit" ] || { echo "test.sh: $junit is missing (apt-get install junit5)" >&2; exit 1; }
# What Redisson's vendored tests need besides JUnit (Debian's jars; Awaitility and Testcontainers
# are not packaged: upstream/redisson/standin has the few calls the tests make).
testlibs=/usr/share/java/assertj-core.jar:/usr/share/java/slf4j-api.jar:/usr/share/java/slf4j-nop.jar
for jar in ${testlibs//:/ }; do
  [ -f "$jar" ] || { echo "test.sh: $jar is missing (apt-get install libassertj-core-java libslf4j-java)" >&2; exit 1; }
done

if [ "$stage" != run ]; then
  bash "$here/build.sh"

  # The jar holds the library's own classes and its manifest, nothing else.
  foreign="$(jar tf "$build/rlock.jar" | grep -v -E '^(META-INF/|META-INF/MANIFEST\.MF|rlock/|rlock/resp/|rlock/[A-Za-z0-9$]+\.class|rlock/resp/[A-Za-z0-9$]+\.class)$' || true)"
  if [ -n "$foreign" ]; then
    echo "test.sh: the jar holds more than the library's classes:" >&2
    echo "$foreign" >&2
    exit 1
  fi

  rm -rf "$build/test-classes"
  mkdir -p "$build/test-classes"
  javac --release 17 -encoding UTF-8 -d "$build/test-classes" -cp "$build/rlock.jar:$junit:$testlibs" \
    $(find "$here/test" "$here/upstream/redisson/standin" "$here/upstream/redisson/src" -name '*.java' | sort)
fi
[ "$stage" != build ] || exit 0

cd "$here"
if [ $# -eq 0 ]; then
  set -- --scan-class-path "$build/test-classes"
fi
exec java -Drlock.module="$module" -Drlock.jar="$build/rlock.jar" \
  -Drlock.test.classpath="$build/rlock.jar:$build/test-classes" \
  -jar "$junit" --class-path "$build/rlock.jar:$build/test-classes:$testlibs" \
  --disable-banner --disable-ansi-colors --details=tree --fail-if-no-tests \
  --config junit.jupiter.execution.timeout.default=60s "$@"
