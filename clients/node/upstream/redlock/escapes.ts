/**
 * Errors that escape redlock's tests. Each test ends in `catch (error) { fail(t, error); }`, and
 * upstream's `fail` is async and not awaited: an error that is not an ExecutionError (such as a
 * `GET` answered WRONGTYPE) rejects fail's promise instead of the test, so AVA reports it only as
 * an unhandled rejection at the worker's end, naming no test. When the launcher asks for it
 * (RLOCK_REDLOCK_ESCAPES, a file; the tests run serially), this records each such rejection
 * with the test it escaped from and the command that raised it, one JSON line each.
 */

import { appendFileSync } from 'node:fs';
import path from 'node:path';
import test from 'ava';

export interface Escape {
  /** AVA's full title ("single › instance - ..."); null when no test had started */
  test: string | null;
  message: string;
  /** the Redis command whose reply it was (ioredis sets it on a ReplyError) */
  command: { name: string; args: unknown[] } | null;
}

const file = process.env.RLOCK_REDLOCK_ESCAPES;
if (file) {
  const prefix = path.basename(test.meta.file.replace(/^file:\/\//, ''), '.test.js');
  let current: string | null = null;
  // Tests run serially. A test's fail() rejects as the test ends, and Node reports the rejection
  // once the microtasks run dry, before any timer or I/O: so the next test's title is set only
  // after a setImmediate, and every rejection so far is from the test named in `current`.
  test.beforeEach(async (t) => {
    await new Promise((resolve) => setImmediate(resolve));
    current = `${prefix} › ${t.title.replace(/^beforeEach hook for /, '')}`;
  });
  process.on('unhandledRejection', (reason) => {
    const error = reason as { message?: unknown; command?: Escape['command'] };
    const escape: Escape = { test: current, message: String(error?.message ?? reason), command: error?.command ?? null };
    appendFileSync(file, `${JSON.stringify(escape)}\n`);
  });
}
