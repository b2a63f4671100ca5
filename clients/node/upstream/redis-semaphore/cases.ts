/**
 * Which of redis-semaphore's tests do not run, and which fail by design, each with its reason.
 * Titles are mocha's full titles; a title here that matches no test is an error (the lists
 * cannot go stale silently), and so is a test listed as failing by design that passes or fails
 * with another message.
 */

import type { Suite, Test } from 'mocha';

/** Tests of redis-semaphore's internals or key layout, and of a fake server: not run. */
export const LEFT_OUT: Record<string, string> = {};

/**
 * Tests that fail because rlock deliberately behaves otherwise (README, "Switching from
 * redis-semaphore"): `because` must match the failure's message.
 */
export const FAILS_BY_DESIGN: Record<string, { reason: string; because: RegExp }> = {};

function tests(suite: Suite): Test[] {
  return [...suite.tests, ...suite.suites.flatMap(tests)];
}

export function applyCaseLists(root: Suite): void {
  const all = tests(root);
  const titles = new Set(all.map((test) => test.fullTitle()));
  const unknown = [...Object.keys(LEFT_OUT), ...Object.keys(FAILS_BY_DESIGN)].filter((title) => !titles.has(title));
  if (unknown.length) throw new Error(`cases.ts lists tests that do not exist:\n  ${unknown.join('\n  ')}`);
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
        try {
          await original.call(this, () => {});
        } catch (err) {
          const message = String((err as Error)?.message ?? err);
          if (byDesign.because.test(message)) return;
          throw new Error(`expected to fail by design (${byDesign.reason}), but failed otherwise: ${message}`);
        }
        throw new Error(`listed as failing by design (${byDesign.reason}) but passed: take it off cases.ts`);
      };
    }
  }
}
