/**
 * The errors rlock throws. Every one is an `Error` with a stable `code`, so callers can test
 * `err.code === 'ERR_RLOCK_TIMEOUT'` as they test Node's own `err.code`.
 */

import type { ExecutionStats } from './quorum';

export class RLockError extends Error {
  readonly code: string;
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = new.target.name;
  }
}

/** The lock (or permits, or latch) was not granted within `acquireTimeout`. */
export class LockTimeoutError extends RLockError {
  constructor(message: string) {
    super('ERR_RLOCK_TIMEOUT', message);
  }
}

/** `release()` of something this object does not hold. */
export class NotOwnedError extends RLockError {
  constructor(message: string, code = 'ERR_RLOCK_NOT_OWNED') {
    super(code, message);
  }
}

/**
 * The holding ended other than by this object's `release()`: its lease ran out, it was
 * force-released or deleted, or its watchdog connection dropped and could not be re-bound.
 * A `NotOwnedError` too.
 */
export class LockLostError extends NotOwnedError {
  constructor(message: string) {
    super(message, 'ERR_RLOCK_LOST');
  }
}

/** The key holds another type (a string, a list, another kind of lock). */
export class WrongTypeError extends RLockError {
  constructor(message: string) {
    super('ERR_RLOCK_WRONGTYPE', message);
  }
}

/** The server does not know the rlock commands: the module is not loaded. */
export class ModuleNotLoadedError extends RLockError {
  constructor(message: string) {
    super('ERR_RLOCK_MODULE_NOT_LOADED', message);
  }
}

/** The server refused a wait that would close a cycle of owners (deadlock detection). */
export class DeadlockError extends RLockError {
  constructor(message: string) {
    super('ERR_RLOCK_DEADLOCK', message);
  }
}

/** The server could not be reached, or the call failed on two connections in a row. */
export class ConnectionError extends RLockError {
  constructor(message: string, cause?: unknown) {
    super('ERR_RLOCK_CONNECTION', message, { cause });
  }
}

/** Any other error reply of the server (`ERR ...`), with its text. */
export class ReplyError extends RLockError {
  constructor(message: string) {
    super('ERR_RLOCK_REPLY', message);
  }
}

/**
 * Redlock: no quorum within the retries. `attempts` is redlock's: one promise per attempt of
 * that attempt's `ExecutionStats` (which server voted for, which against and why), each
 * resolved once every server answered or timed out.
 */
export class ExecutionError extends RLockError {
  readonly attempts: ReadonlyArray<Promise<ExecutionStats>>;
  constructor(message: string, attempts: ReadonlyArray<Promise<ExecutionStats>>) {
    super('ERR_RLOCK_QUORUM', message);
    this.attempts = attempts;
  }
}

/**
 * Redlock: one server's vote against, because another owner (or a key of another type, as
 * redlock counts any existing key) holds a resource; in `ExecutionStats.votesAgainst`.
 */
export class ResourceLockedError extends RLockError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('ERR_RLOCK_LOCKED', message, options);
  }
}

/** An error reply of the server, as the drivers hand it over (internal). */
export class ServerReply extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ServerReply';
  }
}

/** The connection failed before the reply came (internal): the call may be retried. */
export class ConnectionFailure extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConnectionFailure';
  }
}

/** The public error for a failed call. */
export function publicError(err: unknown): Error {
  if (err instanceof RLockError) return err;
  if (err instanceof ServerReply) {
    const text = err.message;
    if (text.startsWith('WRONGTYPE')) return new WrongTypeError(text);
    if (text.startsWith('DEADLOCK')) return new DeadlockError(text);
    if (text.startsWith('CROSSSLOT')) {
      return new RLockError(
        'ERR_RLOCK_CROSSSLOT',
        `rlock: the keys are in different hash slots (${text}): put them in one hash slot with a hash tag, e.g. {order}:1 {order}:2`,
      );
    }
    if (/unknown command/i.test(text) && /'(rlock|rwlock|rsem|rlatch)\./i.test(text)) {
      return new ModuleNotLoadedError(`the rlock module is not loaded on this server (${text})`);
    }
    return new ReplyError(text);
  }
  if (err instanceof ConnectionFailure) return new ConnectionError(err.message, err.cause ?? err);
  if (err instanceof Error) return err;
  return new Error(String(err));
}
