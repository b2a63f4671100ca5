/**
 * The check both upstream runners apply to a vendored suite run unmodified: a test may fail only
 * for a deliberate difference of rlock's, listed by its full title with the reason and a pattern
 * its failure must match. A listed test that passes, or fails with another message, is an error;
 * so is an unlisted test that fails, and a listed title that names no test (a list cannot go
 * stale silently).
 */

export interface ExpectedFailure {
  /** the deliberate difference, as the README states it */
  reason: string;
  /** what the failure's message must match */
  because: RegExp;
}

export type ExpectedFailures = Record<string, ExpectedFailure>;

/** Throws when a list (by its name, e.g. `FAILS_BY_DESIGN`) names a test the suite does not have. */
export function checkListedTitlesExist(titles: Iterable<string>, lists: Record<string, Record<string, unknown>>): void {
  const known = new Set(titles);
  const unknown = Object.entries(lists).flatMap(([list, entries]) =>
    Object.keys(entries)
      .filter((title) => !known.has(title))
      .map((title) => `${list}: ${title}`),
  );
  if (unknown.length) throw new Error(`listed tests that do not exist:\n  ${unknown.join('\n  ')}`);
}

/**
 * Whether a test ended as the list says: undefined when it did, else what is wrong.
 * `failure` is the message it failed with, undefined when it passed.
 */
export function judge(expected: ExpectedFailure | undefined, failure: string | undefined): string | undefined {
  if (!expected) return failure === undefined ? undefined : `failed, and is not listed as failing by design: ${failure}`;
  if (failure === undefined) return `listed as failing by design (${expected.reason}) but passed: take it off the list`;
  if (!expected.because.test(failure)) return `expected to fail by design (${expected.reason}), but failed otherwise: ${failure}`;
  return undefined;
}
