/**
 * Judges the unmodified run of redlock's suite: AVA's TAP report (each test's result) and the
 * errors that escaped the tests (escapes.ts), against the list of expected.ts, with the check
 * redis-semaphore's runner applies too (../expected-failures.ts).
 */

import { type ExpectedFailures, checkListedTitlesExist, judge } from '../expected-failures';
import type { Escape } from './escapes';

interface TapEntry {
  title: string;
  passed: boolean;
  /** the YAML block's message, for a failure */
  message?: string;
}

/** AVA's TAP entries (`ok N - title`, `not ok N - title` and its YAML block's message). */
export function parseTap(text: string): TapEntry[] {
  const entries: TapEntry[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const result = /^(not ok|ok) \d+ - (.*)$/.exec(lines[i]);
    if (result) {
      entries.push({ title: result[2], passed: result[1] === 'ok' });
      continue;
    }
    const message = /^ {4}message: (.*)$/.exec(lines[i]);
    const last = entries[entries.length - 1];
    if (!message || !last || last.passed) continue;
    if (message[1] !== '>-' && message[1] !== '|-') {
      last.message = message[1];
      continue;
    }
    const folded: string[] = [];
    while (i + 1 < lines.length && lines[i + 1].startsWith('      ')) folded.push(lines[++i].trim());
    last.message = folded.join(' ');
  }
  return entries;
}

/** What AVA reports for a test whose only error escaped it before its first assertion. */
const NO_ASSERTIONS = 'Test finished without running any assertions';

function describe(escape: Escape): string {
  const at = escape.command ? ` (at ${escape.command.name.toUpperCase()} ${escape.command.args.join(' ')})` : ' (at no Redis command)';
  return `${escape.message}${at}`;
}

/**
 * A test's failure: the errors that escaped it, each with its command, and AVA's own failure
 * unless it is only the escape's consequence (no assertion ran); undefined when it passed.
 */
function failureOf(entry: TapEntry, escapes: Escape[]): string | undefined {
  const failures = escapes.map(describe);
  if (!entry.passed && !(escapes.length && entry.message === NO_ASSERTIONS)) failures.push(entry.message ?? '(no message)');
  return failures.length ? failures.join('; ') : undefined;
}

export interface Verdict {
  passed: string[];
  failedAsListed: Array<{ title: string; failure: string }>;
  problems: string[];
}

/**
 * `files`: the test files' TAP prefixes ("single", "multi"). Besides the tests, AVA's report has
 * an entry per escaped rejection and one per worker that exited with code 1 because of them:
 * those must match the escapes recorded, and nothing else may be there.
 */
export function check(tap: string, escapes: Escape[], files: string[], expected: ExpectedFailures): Verdict {
  const verdict: Verdict = { passed: [], failedAsListed: [], problems: [] };
  const isTest = (title: string) => files.some((file) => title.startsWith(`${file} › `));
  const entries = parseTap(tap);
  const tests = entries.filter((entry) => isTest(entry.title));
  try {
    checkListedTitlesExist(
      tests.map((entry) => entry.title),
      { FAILS_BY_DESIGN: expected },
    );
  } catch (err) {
    verdict.problems.push((err as Error).message);
  }
  for (const escape of escapes) {
    if (!tests.some((entry) => entry.title === escape.test)) verdict.problems.push(`an error escaped no known test (${escape.test}): ${describe(escape)}`);
  }
  for (const entry of tests) {
    const failure = failureOf(
      entry,
      escapes.filter((escape) => escape.test === entry.title),
    );
    const problem = judge(expected[entry.title], failure);
    if (problem) verdict.problems.push(`${entry.title}: ${problem}`);
    else if (failure === undefined) verdict.passed.push(entry.title);
    else verdict.failedAsListed.push({ title: entry.title, failure });
  }
  const unaccounted = new Map<string, number>();
  for (const escape of escapes) unaccounted.set(escape.message, (unaccounted.get(escape.message) ?? 0) + 1);
  for (const entry of entries.filter((e) => !isTest(e.title))) {
    const exited = /^(?:.*\/)?([^/]+)\.test\.js exited with a non-zero exit code: 1$/.exec(entry.title);
    if (exited && escapes.some((escape) => escape.test?.startsWith(`${exited[1]} › `))) continue;
    const count = entry.message === undefined ? 0 : unaccounted.get(entry.message) ?? 0;
    if (!entry.passed && count > 0 && entry.title.endsWith(`: ${entry.message}`)) {
      unaccounted.set(entry.message!, count - 1);
      continue;
    }
    verdict.problems.push(`AVA reported what no test accounts for: ${entry.passed ? 'ok' : 'not ok'} - ${entry.title}${entry.message ? ` (${entry.message})` : ''}`);
  }
  for (const [message, count] of unaccounted) {
    if (count) verdict.problems.push(`${count} escaped error(s) AVA did not report: ${message}`);
  }
  return verdict;
}
