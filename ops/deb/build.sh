#!/usr/bin/env bash
# Builds target/debian/rlock_<version>_<arch>.deb with dpkg-deb from what `make install`
# puts under PREFIX=/usr. Run by `make deb` (after `make build`).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
version="$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)"
arch="$(dpkg --print-architecture)"
stage="$(mktemp -d)"
chmod 0755 "$stage"
trap 'rm -rf "$stage"' EXIT

make --no-print-directory install DESTDIR="$stage" PREFIX=/usr >/dev/null

# The newest glibc symbol version the module needs: its libc6 dependency.
glibc="$(objdump -T "$stage/usr/lib/redis/modules/librlock.so" | grep -o 'GLIBC_[0-9.]*' \
  | sed 's/GLIBC_//' | sort -V | tail -1)"

install -d "$stage/DEBIAN"
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@GLIBC@/$glibc/" \
  -e "s/@SIZE@/$(du -sk --exclude=DEBIAN "$stage" | cut -f1)/" ops/deb/control.in > "$stage/DEBIAN/control"
echo /etc/redis/rlock.conf > "$stage/DEBIAN/conffiles"
install -m 0755 ops/deb/postinst ops/deb/postrm "$stage/DEBIAN/"
printf 'rlock %s\nLicense: MIT (see Cargo.toml)\n' "$version" > "$stage/usr/share/doc/rlock/copyright"
(cd "$stage" && find usr etc -type f -exec md5sum {} + > DEBIAN/md5sums)

mkdir -p target/debian
package="target/debian/rlock_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$package" >/dev/null
echo "$package"
