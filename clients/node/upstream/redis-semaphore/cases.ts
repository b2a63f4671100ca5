/**
 * Which of redis-semaphore's tests do not run, and which fail by design, each with its reason.
 * Titles are mocha's full titles; a title here that matches no test is an error (the lists
 * cannot go stale silently), and so is a test listed as failing by design that passes or fails
 * with another message.
 */

import type { Suite, Test } from 'mocha';
import { type ExpectedFailures, checkListedTitlesExist, judge } from '../expected-failures';

const READS_HOLDERS =
  "reads who holds it from redis-semaphore's keys (a string at mutex:<key>, a sorted set at semaphore:<key>); rlock keeps its holders at <key> itself, in its own type";
const WRITES_KEYS = "simulates a loss by writing redis-semaphore's keys (SET, DEL, ZADD), where rlock keeps nothing";
const ONLY_READS_KEYS = "its only check reads redis-semaphore's key, where rlock never writes: it would pass whatever rlock did";
const MOCK = 'runs on ioredis-mock, an in-process fake of Redis that cannot load the module';
const PRIVATE = "replaces redis-semaphore's private _refresh";

/** Tests of redis-semaphore's internals or key layout, and of a fake server: not run. */
export const LEFT_OUT: Record<string, string> = {
  'Mutex should acquire and release lock': READS_HOLDERS,
  'Mutex should refresh lock every refreshInterval ms until release': READS_HOLDERS,
  'Mutex should stop refreshing lock every refreshInterval ms if stopped': ONLY_READS_KEYS,
  'Mutex should not call _refresh if already refreshing': PRIVATE,
  'Mutex should support externally acquired mutex (deprecated interface)': READS_HOLDERS,
  'Mutex should support externally acquired mutex': READS_HOLDERS,
  'Mutex should be reusable': READS_HOLDERS,
  'Mutex lost lock case should throw unhandled error if lock was lost between refreshes (another instance acquired)': WRITES_KEYS,
  'Mutex lost lock case should throw unhandled error if lock was lost between refreshes (lock expired)': WRITES_KEYS,
  'Mutex lost lock case should call onLockLost callback if provided (another instance acquired)': WRITES_KEYS,
  'Mutex lost lock case should call onLockLost callback if provided (lock expired)': WRITES_KEYS,
  'Mutex [Node shutdown] should lost lock when node become alive': READS_HOLDERS,
  'Mutex ioredis-mock support should acquire and release lock': MOCK,

  'Semaphore should acquire and release semaphore': READS_HOLDERS,
  'Semaphore should refresh lock every refreshInterval ms until release': READS_HOLDERS,
  'Semaphore should stop refreshing lock if stopped': READS_HOLDERS,
  'Semaphore should acquire maximum LIMIT semaphores': READS_HOLDERS,
  'Semaphore should support externally acquired semaphore (deprecated interface)': READS_HOLDERS,
  'Semaphore should support externally acquired semaphore': READS_HOLDERS,
  'Semaphore lost lock case should throw unhandled error if lock is lost between refreshes': WRITES_KEYS,
  'Semaphore lost lock case should call onLockLost callback if provided': WRITES_KEYS,
  'Semaphore [Node shutdown] should lost lock when node become alive': READS_HOLDERS,
  'Semaphore ioredis-mock support should acquire and release semaphore': MOCK,

  'MultiSemaphore should acquire and release semaphore': READS_HOLDERS,
  'MultiSemaphore should refresh lock every refreshInterval ms until release': READS_HOLDERS,
  'MultiSemaphore should stop refreshing lock if stopped': READS_HOLDERS,
  'MultiSemaphore should acquire maximum LIMIT semaphores': READS_HOLDERS,
  'MultiSemaphore should support externally acquired semaphore (deprecated interface)': READS_HOLDERS,
  'MultiSemaphore should support externally acquired semaphore': READS_HOLDERS,
  'MultiSemaphore lost lock case should throw unhandled error if lock is lost between refreshes': WRITES_KEYS,
  'MultiSemaphore lost lock case should call onLockLost callback if provided': WRITES_KEYS,
  'MultiSemaphore Compatibility with Semaphore should work with Semaphore': READS_HOLDERS,
  'MultiSemaphore [Node shutdown] should lost lock when node become alive': READS_HOLDERS,
  'MultiSemaphore ioredis-mock support should acquire and release semaphore': MOCK,

  'RedlockMutex should acquire and release lock': READS_HOLDERS,
  'RedlockMutex should refresh lock every refreshInterval ms until release': READS_HOLDERS,
  'RedlockMutex should stop refreshing if stopped': ONLY_READS_KEYS,
  'RedlockMutex should support externally acquired mutex (deprecated interface)': READS_HOLDERS,
  'RedlockMutex should support externally acquired mutex': READS_HOLDERS,
  'RedlockMutex should be reusable': READS_HOLDERS,
  'RedlockMutex lost lock case should throw unhandled error if lock is lost between refreshes': WRITES_KEYS,
  'RedlockMutex lost lock case should call onLockLost callback if provided': WRITES_KEYS,
  'RedlockMutex [Node shutdown] should handle server shutdown if quorum is alive': READS_HOLDERS,
  'RedlockMutex ioredis-mock support should acquire and release lock': MOCK,

  'RedlockSemaphore should acquire and release semaphore': READS_HOLDERS,
  'RedlockSemaphore should refresh lock every refreshInterval ms until release': READS_HOLDERS,
  'RedlockSemaphore should stop refreshing lock if stopped': READS_HOLDERS,
  'RedlockSemaphore should acquire maximum LIMIT semaphores': READS_HOLDERS,
  'RedlockSemaphore should support externally acquired semaphore (deprecated interface)': READS_HOLDERS,
  'RedlockSemaphore should support externally acquired semaphore': READS_HOLDERS,
  'RedlockSemaphore lost lock case should throw unhandled error if lock is lost between refreshes': WRITES_KEYS,
  'RedlockSemaphore lost lock case should call onLockLost callback if provided': WRITES_KEYS,
  'RedlockSemaphore [Node shutdown] should handle server shutdown if quorum is alive': READS_HOLDERS,
  'RedlockSemaphore [Node shutdown] should fail and release when quorum become dead': READS_HOLDERS,
  'RedlockSemaphore ioredis-mock support should acquire and release semaphore': MOCK,

  'RedlockMultiSemaphore should acquire and release semaphore': READS_HOLDERS,
  'RedlockMultiSemaphore should refresh lock every refreshInterval ms until release': READS_HOLDERS,
  'RedlockMultiSemaphore should stop refreshing lock if stopped': READS_HOLDERS,
  'RedlockMultiSemaphore should acquire maximum LIMIT semaphores': READS_HOLDERS,
  'RedlockMultiSemaphore should support externally acquired semaphore (deprecated interface)': READS_HOLDERS,
  'RedlockMultiSemaphore should support externally acquired semaphore': READS_HOLDERS,
  'RedlockMultiSemaphore lost lock case should throw unhandled error if lock is lost between refreshes': WRITES_KEYS,
  'RedlockMultiSemaphore lost lock case should call onLockLost callback if provided': WRITES_KEYS,
  'RedlockMultiSemaphore Compatibility with Semaphore should work with Semaphore': READS_HOLDERS,
  'RedlockMultiSemaphore [Node shutdown] should handle server shutdown if quorum is alive': READS_HOLDERS,
  'RedlockMultiSemaphore ioredis-mock support should acquire and release semaphore': MOCK,
};

const KEY_AS_GIVEN = {
  reason:
    "keys are used as given, without redis-semaphore's mutex:/semaphore: prefix (every rlock client, in any language, names a lock by its key), so the timeout message names `key`",
  because: /rejected with an error including 'Acquire [a-z-]+ (mutex:|sema).*but got 'Acquire /,
};

/**
 * Tests that fail because rlock deliberately behaves otherwise (README, "Switching from
 * redis-semaphore"): `because` must match the failure's message.
 */
export const FAILS_BY_DESIGN: ExpectedFailures = {
  'Mutex should reject after timeout': KEY_AS_GIVEN,
  'Semaphore should reject after timeout': KEY_AS_GIVEN,
  'Semaphore reusable autorefresh disabled': KEY_AS_GIVEN,
  'MultiSemaphore should reject after timeout': KEY_AS_GIVEN,
  'MultiSemaphore reusable autorefresh disabled': KEY_AS_GIVEN,
  'RedlockMutex should reject after timeout': KEY_AS_GIVEN,
  'RedlockMutex [Node shutdown] should fail and release when quorum is become dead': KEY_AS_GIVEN,
  'RedlockSemaphore should reject after timeout': KEY_AS_GIVEN,
  'RedlockSemaphore reusable autorefresh disabled': KEY_AS_GIVEN,
  'RedlockMultiSemaphore should reject after timeout': KEY_AS_GIVEN,
  'RedlockMultiSemaphore reusable autorefresh disabled': KEY_AS_GIVEN,
  'RedlockMultiSemaphore [Node shutdown] should fail and release if quorum become dead': KEY_AS_GIVEN,
};

function tests(suite: Suite): Test[] {
  return [...suite.tests, ...suite.suites.flatMap(tests)];
}

export function applyCaseLists(root: Suite): void {
  const all = tests(root);
  checkListedTitlesExist(
    all.map((test) => test.fullTitle()),
    { LEFT_OUT, FAILS_BY_DESIGN },
  );
  for (const test of all) {
    const title = test.fullTitle();
    if (LEFT_OUT[title]) {
      test.pending = true;
      test.title += ` [left out: ${LEFT_OUT[title]}]`;
    }
    const byDesign = FAILS_BY_DESIGN[title];
    if (byDesign && test.fn) {
      const original = test.fn;
      test.title += ` [fails by design: ${byDesign.reason}]`;
      test.fn = async function (this: Mocha.Context) {
        let failure: string | undefined;
        try {
          await original.call(this, () => {});
        } catch (err) {
          failure = String((err as Error)?.message ?? err);
        }
        const problem = judge(byDesign, failure);
        if (problem) throw new Error(problem);
      };
    }
  }
}
