/* floor.c: a measurement module. Each command does one more step of a lock acquire than the
 * one before, so that callgrind's instructions per call (inside processCommand) give the cost of
 * each step on a fresh key. Built and driven by run.sh; see README.md in this folder.
 *
 *   FLOOR.NOOP key                    reply +OK (module command dispatch)
 *   FLOOR.OPEN key                    OpenKey(READ|WRITE) + CloseKey + reply
 *   FLOOR.HSET2 key owner token       HashSet owner -> 1, rlock:token -> token; SetAbsExpire
 *   FLOOR.HSET2REP key owner token    HSET2 + Replicate(HSET) + Replicate(PEXPIREAT), like rlock
 *   FLOOR.HSET2REP1 key owner token   HSET2 + Replicate(HSET) only (no MULTI/EXEC wrapping)
 *   FLOOR.HSET2REPX key owner token   HSET2 + Replicate(PEXPIREAT) only: with REP1, isolates the
 *                                     MULTI/EXEC that wraps REP's two commands
 *   FLOOR.DT key owner token          a module data type value + SetAbsExpire
 *   FLOOR.DTREP key owner token       DT + Replicate(FLOOR.DTSET key owner token expire-at)
 *   FLOOR.DTVERB key owner token      DT + ReplicateVerbatim
 *   FLOOR.DTSET key owner token [expire-at]   what DTREP replicates and the AOF rewrite emits
 *
 * The lease is 30000 ms from RedisModule_Milliseconds(), as in `RLOCK.ACQUIRE key owner PX
 * 30000`. Not a lock: no check of a holder, no re-entry. The data type saves, loads, rewrites
 * and frees correctly so that a replica's full sync or a restart does not crash. */
#define REDISMODULE_MAIN
#include "redismodule.h"

#include <string.h>

#define LEASE_MS 30000

static RedisModuleType *FloorType;
static RedisModuleString *One;      /* "1", the hold count */
static RedisModuleString *TokenField; /* "rlock:token" */

/* The lean layout: one allocation per lock. */
typedef struct {
    long long holds;
    long long token;
    size_t owner_len;
    char owner[];
} FloorLock;

static FloorLock *lock_new(const char *owner, size_t len, long long holds, long long token) {
    FloorLock *l = RedisModule_Alloc(sizeof(FloorLock) + len);
    l->holds = holds;
    l->token = token;
    l->owner_len = len;
    memcpy(l->owner, owner, len);
    return l;
}

/* ---- data type callbacks ---- */

static void *dt_rdb_load(RedisModuleIO *io, int encver) {
    if (encver != 0) return NULL;
    size_t len;
    char *owner = RedisModule_LoadStringBuffer(io, &len);
    long long holds = RedisModule_LoadSigned(io);
    long long token = RedisModule_LoadSigned(io);
    FloorLock *l = lock_new(owner, len, holds, token);
    RedisModule_Free(owner);
    return l;
}

static void dt_rdb_save(RedisModuleIO *io, void *value) {
    FloorLock *l = value;
    RedisModule_SaveStringBuffer(io, l->owner, l->owner_len);
    RedisModule_SaveSigned(io, l->holds);
    RedisModule_SaveSigned(io, l->token);
}

static void dt_aof_rewrite(RedisModuleIO *aof, RedisModuleString *key, void *value) {
    FloorLock *l = value;
    /* The key's TTL is emitted by Redis itself after this command. */
    RedisModule_EmitAOF(aof, "FLOOR.DTSET", "sbl", key, l->owner, l->owner_len, l->token);
}

static size_t dt_mem_usage(const void *value) {
    const FloorLock *l = value;
    return sizeof(FloorLock) + l->owner_len;
}

static void dt_free(void *value) { RedisModule_Free(value); }

/* ---- commands ---- */

static int cmd_noop(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    if (argc != 2) return RedisModule_WrongArity(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

static int cmd_open(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 2) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    RedisModule_CloseKey(key);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

/* Steps 3-5. reps: 0 = none, 1 = HSET only, 2 = HSET and PEXPIREAT (rlock's way),
 * 3 = PEXPIREAT only. */
static int hset2(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int reps) {
    if (argc != 4) return RedisModule_WrongArity(ctx);
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    RedisModule_HashSet(key, REDISMODULE_HASH_NONE, argv[2], One, TokenField, argv[3], NULL);
    long long at = RedisModule_Milliseconds() + LEASE_MS;
    RedisModule_SetAbsExpire(key, at);
    if (reps == 1 || reps == 2) {
        /* Like rlock: one 'v' array holding key, owner, "1", rlock:token, token. */
        RedisModuleString *hargv[5] = {argv[1], argv[2], One, TokenField, argv[3]};
        RedisModule_Replicate(ctx, "HSET", "v", hargv, (size_t)5);
    }
    if (reps >= 2) RedisModule_Replicate(ctx, "PEXPIREAT", "sl", argv[1], at);
    RedisModule_CloseKey(key);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

static int cmd_hset2(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    return hset2(ctx, argv, argc, 0);
}
static int cmd_hset2rep1(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    return hset2(ctx, argv, argc, 1);
}
static int cmd_hset2rep(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    return hset2(ctx, argv, argc, 2);
}
static int cmd_hset2repx(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    return hset2(ctx, argv, argc, 3);
}

/* Sets a FloorLock at argv[1]; at > 0 sets the key's absolute expiry. Returns 0 on a bad
 * token (after replying the error). */
static int dt_write(RedisModuleCtx *ctx, RedisModuleString **argv, long long at) {
    long long token;
    if (RedisModule_StringToLongLong(argv[3], &token) != REDISMODULE_OK) {
        RedisModule_ReplyWithError(ctx, "ERR token is not an integer");
        return 0;
    }
    size_t len;
    const char *owner = RedisModule_StringPtrLen(argv[2], &len);
    RedisModuleKey *key = RedisModule_OpenKey(ctx, argv[1], REDISMODULE_READ | REDISMODULE_WRITE);
    RedisModule_ModuleTypeSetValue(key, FloorType, lock_new(owner, len, 1, token));
    if (at > 0) RedisModule_SetAbsExpire(key, at);
    RedisModule_CloseKey(key);
    return 1;
}

/* Steps 6-8. rep: 0 = none, 1 = Replicate(FLOOR.DTSET ...), 2 = ReplicateVerbatim. */
static int dt(RedisModuleCtx *ctx, RedisModuleString **argv, int argc, int rep) {
    if (argc != 4) return RedisModule_WrongArity(ctx);
    long long at = RedisModule_Milliseconds() + LEASE_MS;
    if (!dt_write(ctx, argv, at)) return REDISMODULE_OK;
    if (rep == 1) RedisModule_Replicate(ctx, "FLOOR.DTSET", "sssl", argv[1], argv[2], argv[3], at);
    if (rep == 2) RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

static int cmd_dt(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    return dt(ctx, argv, argc, 0);
}
static int cmd_dtrep(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    return dt(ctx, argv, argc, 1);
}
static int cmd_dtverb(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    return dt(ctx, argv, argc, 2);
}

static int cmd_dtset(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (argc != 4 && argc != 5) return RedisModule_WrongArity(ctx);
    long long at = 0;
    if (argc == 5 && RedisModule_StringToLongLong(argv[4], &at) != REDISMODULE_OK)
        return RedisModule_ReplyWithError(ctx, "ERR expire-at is not an integer");
    if (!dt_write(ctx, argv, at)) return REDISMODULE_OK;
    RedisModule_ReplicateVerbatim(ctx);
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    if (RedisModule_Init(ctx, "floor", 1, REDISMODULE_APIVER_1) == REDISMODULE_ERR)
        return REDISMODULE_ERR;

    RedisModuleTypeMethods tm = {
        .version = 1, /* only the version-1 callbacks: Redis 7.0 knows them all */
        .rdb_load = dt_rdb_load,
        .rdb_save = dt_rdb_save,
        .aof_rewrite = dt_aof_rewrite,
        .mem_usage = dt_mem_usage,
        .free = dt_free,
    };
    FloorType = RedisModule_CreateDataType(ctx, "floorlock", 0, &tm);
    if (FloorType == NULL) return REDISMODULE_ERR;

    One = RedisModule_CreateString(NULL, "1", 1);
    TokenField = RedisModule_CreateString(NULL, "rlock:token", 11);

    struct {
        const char *name;
        RedisModuleCmdFunc fn;
    } cmds[] = {
        {"floor.noop", cmd_noop},         {"floor.open", cmd_open},
        {"floor.hset2", cmd_hset2},       {"floor.hset2rep", cmd_hset2rep},
        {"floor.hset2rep1", cmd_hset2rep1}, {"floor.hset2repx", cmd_hset2repx},
        {"floor.dt", cmd_dt},
        {"floor.dtrep", cmd_dtrep},       {"floor.dtverb", cmd_dtverb},
        {"floor.dtset", cmd_dtset},
    };
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        if (RedisModule_CreateCommand(ctx, cmds[i].name, cmds[i].fn, "write deny-oom", 1, 1, 1) ==
            REDISMODULE_ERR)
            return REDISMODULE_ERR;
    }
    return REDISMODULE_OK;
}
