/**
 * The tests of redlock's suite, run unmodified, that fail by design (README, "Run unmodified").
 * All for one difference: they read the lock with `GET` and compare it with `lock.value`;
 * rlock's lock is Redisson's hash (holder → count), not redlock's string, so the first `GET` of
 * a held lock answers WRONGTYPE and the test stops there. check.ts describes such a failure as
 * its message and the command that raised it.
 */

import type { ExpectedFailure, ExpectedFailures } from '../expected-failures';

const GET_ON_HASH: ExpectedFailure = {
  reason: "reads the lock with GET; rlock's lock is Redisson's hash (holder → count), not redlock's string",
  because: /^WRONGTYPE Operation against a key holding the wrong kind of value \(at GET [^;]*\)$/,
};

const TESTS_READING_THE_LOCK = [
  'single › instance - acquires, extends, and releases a single lock',
  'single › instance - acquires, extends, and releases a multi-resource lock',
  'single › instance - locks automatically expire',
  'single › instance - individual locks are exclusive',
  'single › instance - overlapping multi-locks are exclusive',
  'single › instance - the `using` helper acquires, extends, and releases locks',
  'single › instance - the `using` helper is exclusive',
  'single › cluster - acquires, extends, and releases a single lock',
  'single › cluster - acquires, extends, and releases a multi-resource lock',
  'single › cluster - locks automatically expire',
  'single › cluster - individual locks are exclusive',
  'single › cluster - overlapping multi-locks are exclusive',
  'single › cluster - the `using` helper acquires, extends, and releases locks',
  'single › cluster - the `using` helper is exclusive',
  'multi › instance - acquires, extends, and releases a single lock',
  'multi › instance - succeeds when a minority of clients fail',
  'multi › cluster - acquires, extends, and releases a single lock',
  'multi › cluster - succeeds when a minority of clients fail',
];

export const FAILS_BY_DESIGN: ExpectedFailures = Object.fromEntries(TESTS_READING_THE_LOCK.map((title) => [title, GET_ON_HASH]));
