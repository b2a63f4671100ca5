#!/usr/bin/env bash
# Instructions per call inside processCommand, counted by callgrind, for the steps of a fresh
# lock acquire (floor.c) against SET NX PX, DEL, RLOCK.ACQUIRE and RLOCK.RELEASE.
# See README.md in this folder. Takes ~2 minutes with the defaults on 2 CPUs (~5 with JOBS=1).
#
#   bash benches/floor/run.sh
#
# Environment: N (commands per case, 20000), ROUNDS (rounds without a replica, 3),
# REPLICA_ROUNDS (rounds with a replica attached, 3; 0 skips them), JOBS (rounds run at once, 2),
# PORT (first port, 7741; round i uses PORT+2i and PORT+2i+1), WORK (/tmp/rlock-floor: module
# copies, command files, callgrind dumps), RLOCK_SO (target/release/librlock.so), REDIS_SERVER
# (/usr/bin/redis-server), REDISMODULE_H_DIR (the folder holding redismodule.h; default: the
# redis-module crate's, from the cargo registry).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
N=${N:-20000}
ROUNDS=${ROUNDS:-3}
REPLICA_ROUNDS=${REPLICA_ROUNDS:-3}
JOBS=${JOBS:-2}
PORT=${PORT:-7741}
WORK=${WORK:-/tmp/rlock-floor}
RLOCK_SO=${RLOCK_SO:-$ROOT/target/release/librlock.so}
REDIS_SERVER=${REDIS_SERVER:-/usr/bin/redis-server}

for tool in valgrind callgrind_control callgrind_annotate redis-cli gcc python3 "$REDIS_SERVER"; do
    command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 1; }
done
[ -f "$RLOCK_SO" ] || { echo "missing $RLOCK_SO: run 'make build' first" >&2; exit 1; }
if [ -z "${REDISMODULE_H_DIR:-}" ]; then
    REDISMODULE_H_DIR=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/redis-module-[0-9]*/src/include \
        2>/dev/null | sort -V | tail -1)
fi
[ -f "$REDISMODULE_H_DIR/redismodule.h" ] || { echo "redismodule.h not found: set REDISMODULE_H_DIR" >&2; exit 1; }
TOTAL_ROUNDS=$((ROUNDS + REPLICA_ROUNDS))
for p in $(seq "$PORT" $((PORT + 2 * TOTAL_ROUNDS - 1))); do
    if redis-cli -p "$p" PING >/dev/null 2>&1; then echo "port $p is in use: set PORT" >&2; exit 1; fi
done

mkdir -p "$WORK"
rm -rf "$WORK"/cg.* "$WORK"/*.log "$WORK"/results.* "$WORK"/pids.* "$WORK"/out.* "$WORK"/dir.*
# Copies, so that a rebuild of the module does not change the file a server has loaded.
cp "$RLOCK_SO" "$WORK/librlock.so"
gcc -O2 -shared -fPIC -Wall -I"$REDISMODULE_H_DIR" -o "$WORK/floor.so" "$HERE/floor.c"

# ---- command files: a fresh key per call ----
OWNER=owner-3f2a1b4c-5d6e:1
gen() { # gen NAME AWK-BODY ($1 is the call number, o the owner)
    seq 1 "$N" | awk -v o="$OWNER" "{ $2 }" >"$WORK/$1.txt"
}
gen set     'print "SET k:" $1 " 1 NX PX 30000"'
gen del     'print "DEL k:" $1'
gen acquire 'print "RLOCK.ACQUIRE k:" $1 " " o " PX 30000"'
gen release 'print "RLOCK.RELEASE k:" $1 " " o'
gen noop    'print "FLOOR.NOOP k:" $1'
gen open    'print "FLOOR.OPEN k:" $1'
for c in hset2 hset2rep hset2rep1 hset2repx dt dtrep dtverb; do
    # token: 16 digits, distinct per call, like rlock's
    gen "$c" "print \"FLOOR.$(echo $c | tr a-z A-Z) k:\" \$1 \" \" o \" 1732300\" sprintf(\"%09d\", \$1)"
done

# Cases: name, setup file (- = none), expected reply (regex), keys left after the case on the
# master and on a replica, label. HSET2REPX replicates only the PEXPIREAT (of a key the replica
# never gets): a measurement, not a replication anyone should use.
CASES="
set       -       ^OK$       $N  $N  SET key 1 NX PX 30000
del       set     ^1$        0   0   DEL key (a SET NX PX key)
acquire   -       ^[0-9]+$   $N  $N  RLOCK.ACQUIRE key owner PX 30000
release   acquire ^0$        0   0   RLOCK.RELEASE key owner (holds 1)
noop      -       ^OK$       0   0   1 NOOP: module command + reply
open      -       ^OK$       0   0   2 OPEN: 1 + OpenKey/CloseKey
hset2     -       ^OK$       $N  0   3 HSET2: 2 + HashSet 2 fields + SetAbsExpire
hset2rep  -       ^OK$       $N  $N  4 HSET2REP: 3 + Replicate HSET, PEXPIREAT
hset2rep1 -       ^OK$       $N  $N  5 HSET2REP1: 3 + Replicate HSET
hset2repx -       ^OK$       $N  0   5x HSET2REPX: 3 + Replicate PEXPIREAT
dt        -       ^OK$       $N  0   6 DT: 2 + module type value + SetAbsExpire
dtrep     -       ^OK$       $N  $N  7 DTREP: 6 + Replicate FLOOR.DTSET
dtverb    -       ^OK$       $N  $N  8 DTVERB: 6 + ReplicateVerbatim
"
REPLICA_CASES="set acquire hset2 hset2rep hset2rep1 hset2repx dt dtrep dtverb"
case_line() { echo "$CASES" | awk -v n="$1" '$1 == n'; }

wait_ping() {
    for _ in $(seq 1 240); do redis-cli -p "$1" PING >/dev/null 2>&1 && return 0; sleep 0.25; done
    echo "server on port $1 did not start" >&2; return 1
}
info_field() { redis-cli -p "$1" INFO replication | tr -d '\r' | awk -F: -v f="$2" '$1 == f { print $2 }'; }
wait_synced() { # wait_synced MASTER-PORT REPLICA-PORT
    for _ in $(seq 1 400); do
        local m r
        m=$(info_field "$1" master_repl_offset)
        r=$(info_field "$2" slave_repl_offset)
        [ "$(info_field "$2" master_link_status)" = up ] && [ -n "$r" ] && [ "$m" = "$r" ] && return 0
        sleep 0.25
    done
    echo "replica on port $2 did not catch up" >&2; return 1
}
stop() { # stop PORT PID
    redis-cli -p "$1" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    while kill -0 "$2" 2>/dev/null; do sleep 0.1; done
}

# round KIND(plain|replica) R SLOT: every case once, each on a fresh server under callgrind (and,
# for KIND replica, a fresh replica without it); appends "KIND NAME INSTRUCTIONS-PER-CALL" to
# results.TAG. A fresh server per case: jemalloc's state after earlier cases moves a case's
# count by up to ~300 instructions per call.
round() {
    local kind=$1 r=$2 slot=$3 tag names port=$((PORT + 2 * $3)) rport=$((PORT + 2 * $3 + 1))
    local vg_pid replica_pid name setup expect keys rkeys dir total ok dbsize rsize note
    tag=${kind:0:1}$r
    if [ "$kind" = plain ]; then names=$(echo "$CASES" | awk 'NF { print $1 }')
    else names=$(echo $REPLICA_CASES | tr ' ' '\n'); fi

    for name in $names; do
        read -r name setup expect keys rkeys _ <<<"$(case_line "$name")"
        # Empty directories: a master that starts from an RDB carrying replication info (a
        # replica's dump.rdb) creates a replication backlog and pays for feeding it on every write.
        dir=$WORK/dir.$tag.$name
        mkdir -p "$dir/master" "$dir/replica"
        (cd "$dir/master" && exec valgrind --tool=callgrind --toggle-collect=processCommand \
            --instr-atstart=no --callgrind-out-file="$WORK/cg.$tag.$name" "$REDIS_SERVER" \
            --port "$port" --save '' --appendonly no --repl-diskless-sync-delay 0 \
            --activerehashing no \
            --loadmodule "$WORK/floor.so" --loadmodule "$WORK/librlock.so" >"$WORK/vg.$tag.$name.log" 2>&1) &
        vg_pid=$!
        replica_pid=""
        echo "$vg_pid" >>"$WORK/pids.$tag"
        wait_ping "$port"
        if [ "$kind" = replica ]; then
            (cd "$dir/replica" && exec "$REDIS_SERVER" --port "$rport" --save '' --appendonly no \
                --replicaof 127.0.0.1 "$port" \
                --loadmodule "$WORK/floor.so" --loadmodule "$WORK/librlock.so" >"$WORK/replica.$tag.$name.log" 2>&1) &
            replica_pid=$!
            echo "$replica_pid" >>"$WORK/pids.$tag"
            wait_ping "$rport"
            wait_synced "$port" "$rport"
        fi

        [ "$setup" = - ] || redis-cli -p "$port" <"$WORK/$setup.txt" >/dev/null
        [ -z "$replica_pid" ] || wait_synced "$port" "$rport"
        callgrind_control -i on "$vg_pid" >/dev/null 2>&1
        python3 "$HERE/client.py" "$port" "$WORK/$name.txt" >"$WORK/out.$tag"
        callgrind_control -i off "$vg_pid" >/dev/null 2>&1
        ok=$(grep -cE "$expect" "$WORK/out.$tag" || true)
        dbsize=$(redis-cli -p "$port" DBSIZE)
        note=""
        [ "$ok" = "$N" ] || note="$note replies:$ok/$N-as-expected"
        [ "$dbsize" = "$keys" ] || note="$note dbsize:$dbsize"
        if [ -n "$replica_pid" ]; then
            wait_synced "$port" "$rport"
            rsize=$(redis-cli -p "$rport" DBSIZE)
            [ "$rsize" = "$rkeys" ] || note="$note replica-dbsize:$rsize"
            stop "$rport" "$replica_pid"
        fi
        stop "$port" "$vg_pid"   # callgrind writes its totals at exit
        : >"$WORK/pids.$tag"
        total=$(awk '/^totals:/ { print $2 }' "$WORK/cg.$tag.$name")
        [ -z "$note" ] || echo "WARNING $tag $name:$note" >&2
        echo "$kind $name $((total / N))" >>"$WORK/results.$tag"
    done
    rm -f "$WORK/pids.$tag"
    echo "round $tag done" >&2
}

cleanup() {
    local pid
    for pid in $(cat "$WORK"/pids.* 2>/dev/null); do kill "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

t0=$(date +%s)
slot=0
jobs_list="$(seq 1 "$ROUNDS" | sed 's/^/plain /'; seq 1 "$REPLICA_ROUNDS" | sed 's/^/replica /')"
while read -r kind r; do
    [ -n "$kind" ] || continue
    while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
    round "$kind" "$r" "$slot" &
    slot=$((slot + 1))
done <<<"$jobs_list"
wait
cat "$WORK"/results.* >"$WORK/results.txt"
runs=$(wc -l <"$WORK/results.txt")
expected=$((ROUNDS * $(echo "$CASES" | awk 'NF' | wc -l) + REPLICA_ROUNDS * $(echo $REPLICA_CASES | wc -w)))
[ "$runs" = "$expected" ] || echo "WARNING: $runs of $expected measurements made" >&2

# ---- table: median (min-max) per case, and the median's ratio to SET NX PX ----
echo
echo "redis-server $("$REDIS_SERVER" --version | awk '{print $3}'), N=$N calls per case," \
    "$ROUNDS rounds without a replica, $REPLICA_ROUNDS with one ($(($(date +%s) - t0)) s)"
echo "instructions per call inside processCommand: median (min-max), ratio of medians to SET NX PX"
printf '%-45s | %-26s | %-26s\n' case "no replica" "replica attached"
printf -- '-%.0s' $(seq 1 103); echo
stats() { # stats KIND NAME -> "median min max", or nothing
    awk -v k="$1" -v n="$2" '$1 == k && $2 == n { print $3 }' "$WORK/results.txt" | sort -n |
        awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)], v[1], v[NR] }'
}
cell() { # cell KIND NAME
    local s base
    s=$(stats "$1" "$2")
    base=$(stats "$1" set | awk '{ print $1 }')
    [ -n "$s" ] || { echo "-"; return; }
    echo "$s" | awk -v b="$base" '{ printf "%d (%d-%d) %.2fx", $1, $2, $3, $1 / b }'
}
echo "$CASES" | awk 'NF' | while read -r name _ _ _ _ label; do
    printf '%-45s | %-26s | %-26s\n' "$label" "$(cell plain "$name")" "$(cell replica "$name")"
done
echo "callgrind dumps: $WORK/cg.<p|r><round>.<case> (callgrind_annotate --inclusive=yes FILE)"
