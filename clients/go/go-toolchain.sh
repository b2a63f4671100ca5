#!/usr/bin/env bash
# Prints the bin directory of a Go new enough for this package (go-redis v9.23 needs 1.26):
# the preinstalled one (/usr/local/go) or one on PATH when new enough; otherwise any older Go
# (Debian's golang-go 1.19) downloads the pinned toolchain, which the Go module proxy serves as
# the module golang.org/toolchain, and that is used. Debian's 1.19 itself is never used to
# build, and never put first on PATH.
set -euo pipefail
want_minor=26
pinned=v0.0.1-go1.26.8.linux-amd64
new_enough() {
    local v
    v="$("$1" env GOVERSION 2>/dev/null || true)" # go1.26.8
    [[ "$v" =~ ^go1\.([0-9]+) ]] && [ "${BASH_REMATCH[1]}" -ge "$want_minor" ]
}
for go in /usr/local/go/bin/go $(command -v -a go 2>/dev/null || true) /usr/lib/go-1.*/bin/go; do
    if [ -x "$go" ] && new_enough "$go"; then
        dirname "$go"
        exit 0
    fi
done
for boot in $(command -v -a go 2>/dev/null || true) /usr/lib/go-1.*/bin/go; do
    [ -x "$boot" ] || continue
    dir="$(cd /tmp && GOFLAGS=-modcacherw GO111MODULE=on GOTOOLCHAIN=local "$boot" mod download -json "golang.org/toolchain@$pinned" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])')"
    chmod +x "$dir"/bin/* "$dir"/pkg/tool/*/* 2>/dev/null || true
    if new_enough "$dir/bin/go"; then
        echo "$dir/bin"
        exit 0
    fi
done
echo "go-toolchain.sh: no Go 1.$want_minor or newer, and no Go to download it with (apt-get install golang-go)" >&2
exit 1
