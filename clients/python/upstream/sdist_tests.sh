#!/usr/bin/env bash
# Puts the named members (tests, pytest settings) of a PyPI sdist into a directory, once:
# sdist_tests.sh <python> <project> <version> <archive name> <dest> <member>...
# Only those files: `import` in the tests must find the installed packages.
set -euo pipefail

python="$1" project="$2" version="$3" archive="$4" dest="$5"
shift 5
if [ -f "$dest/.complete" ]; then
  exit 0
fi
download="$(mktemp -d)"
trap 'rm -rf "$download"' EXIT
"$python" -m pip download --quiet --disable-pip-version-check --no-binary :all: --no-deps \
  "$project==$version" -d "$download"
mkdir -p "$dest"
tar -xzf "$download/$archive-$version.tar.gz" -C "$dest" --strip-components=1 \
  "${@/#/$archive-$version/}"
touch "$dest/.complete"
