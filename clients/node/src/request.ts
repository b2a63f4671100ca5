/** The pieces of one call every part of the connection layer shares: request ids and time limits. */

import { randomUUID } from 'node:crypto';
import { ConnectionFailure } from './errors';

export const DEFAULT_RESPONSE_TIMEOUT = 2000;
export const RECONNECT_PAUSE_MS = 100;

/**
 * Request ids: a random 128-bit prefix per process and a counter, unique as a uuid per call is,
 * without drawing 16 random bytes and rewriting a string on every call.
 */
const REQUEST_ID_PREFIX = randomUUID().replace(/-/g, '');
let requestCounter = 0;

/** A fresh id for one logical call (retry rule): re-sent unchanged by its retry, never counted twice. */
export function requestId(): string {
  return REQUEST_ID_PREFIX + (++requestCounter).toString(36);
}

/** `promise`, or a `ConnectionFailure` after `ms` (and `onTimeout`, which closes the connection). */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string, onTimeout?: () => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      onTimeout?.();
      reject(new ConnectionFailure(`no reply to ${what} within ${ms} ms`));
    }, ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err) => {
        clearTimeout(timer);
        reject(err);
      },
    );
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** An error reply that means: not this node (a primary turned replica; Cluster: the slot is served elsewhere). */
export function isRedirect(message: string): boolean {
  return message.startsWith('READONLY') || message.startsWith('MOVED ');
}

/** An error reply that means: nothing ran, the same may succeed shortly on the same node. */
export function isTryAgain(message: string): boolean {
  return /^(TRYAGAIN|CLUSTERDOWN|MASTERDOWN|LOADING) /.test(message);
}
