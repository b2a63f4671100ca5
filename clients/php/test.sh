#!/usr/bin/env bash
# Runs the PHP package's tests (phpunit, against real redis-server processes with the module
# loaded, Sentinel and Cluster from clients/harness). Debian's packages only (php-cli, php-redis,
# php-predis, php-symfony-lock, php-symfony-semaphore, php-symfony-framework-bundle,
# php-laravel-framework, phpunit): nothing
# is downloaded. Extra arguments go to phpunit (e.g. --filter Symfony, or tests/SpecTest.php).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
export RLOCK_MODULE="${RLOCK_MODULE:-${CARGO_TARGET_DIR:-$root/target}/release/librlock.so}"
if [ ! -f "$RLOCK_MODULE" ]; then
    echo "test.sh: $RLOCK_MODULE is missing; building the module first" >&2
    make -C "$root" build
fi
for need in php phpunit; do
    command -v "$need" >/dev/null || { echo "test.sh: $need is missing (make test-deps installs it)" >&2; exit 1; }
done
php -r 'exit(extension_loaded("redis") && extension_loaded("pcntl") && extension_loaded("posix") ? 0 : 1);' \
    || { echo "test.sh: php-redis (phpredis), pcntl or posix is missing" >&2; exit 1; }
cd "$root/clients/php"
# Every file parses (php -l), then the scenario files are checked before the runner reads them.
find src tests bootstrap.php -name '*.php' -print0 | xargs -0 -n1 php -l >/dev/null
python3 "$root/clients/spec/check.py" >/dev/null
exec phpunit --configuration phpunit.xml "$@"
