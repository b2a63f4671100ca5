/**
 * Runs redis-semaphore's own mocha suite (test/, vendored unmodified but for imports and server
 * set-up) against rlock: starts its three redis servers with the module, loads its test files,
 * applies the lists of cases.ts (left out; failing by design) and runs mocha. Exit code: the
 * number of failures, as mocha's.
 */

import path from 'node:path';
import Mocha from 'mocha';
import { applyCaseLists } from './cases';
import { startAll, stopAll } from './servers';

/** The whole suite's limit: it takes about 12 s; a hang ends here, naming the test that hung. */
const SUITE_LIMIT_MS = 180_000;

const FILES = [
  'setup.js',
  'init.test.js',
  'src/index.test.js',
  'src/RedisMutex.test.js',
  'src/RedisSemaphore.test.js',
  'src/RedisMultiSemaphore.test.js',
  'src/RedlockMutex.test.js',
  'src/RedlockSemaphore.test.js',
  'src/RedlockMultiSemaphore.test.js',
];

async function main(): Promise<number> {
  await startAll();
  // its .mocharc.yaml: 5 s per test (the tests raise it where they need more)
  const mocha = new Mocha({ timeout: 5000, grep: process.env.GREP });
  for (const file of FILES) mocha.addFile(path.join(__dirname, 'test', file));
  await mocha.loadFilesAsync();
  applyCaseLists(mocha.suite);
  return new Promise((resolve) => {
    const runner = mocha.run(resolve);
    setTimeout(() => {
      console.error(`redis-semaphore's suite passed its ${SUITE_LIMIT_MS} ms limit in: ${runner.currentRunnable?.fullTitle() ?? '?'}`);
      resolve(100);
    }, SUITE_LIMIT_MS).unref();
  });
}

main().then(
  (failures) => {
    stopAll();
    process.exit(Math.min(failures, 100));
  },
  (err) => {
    console.error(err);
    stopAll();
    process.exit(101);
  },
);
