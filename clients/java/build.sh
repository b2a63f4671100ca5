#!/usr/bin/env bash
# Builds the Java client with the JDK alone: clients/java/build/rlock.jar (the library's classes
# and nothing else). Needs javac and jar (Debian: default-jdk-headless).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$here/build"
rm -rf "$build/classes" "$build/rlock.jar"
mkdir -p "$build/classes"
javac --release 17 -Xlint:all,-serial -Werror -encoding UTF-8 -d "$build/classes" $(find "$here/src" -name '*.java' | sort)
printf 'Automatic-Module-Name: rlock\nImplementation-Title: rlock Java client\n' > "$build/manifest.txt"
jar --create --file "$build/rlock.jar" --manifest "$build/manifest.txt" -C "$build/classes" .
echo "built $build/rlock.jar ($(jar tf "$build/rlock.jar" | grep -c '\.class$') classes)"
