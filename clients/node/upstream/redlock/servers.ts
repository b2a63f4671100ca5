/**
 * What redlock's tests need from our side, beside the imports: where the servers are (the
 * launcher run.ts started them and passes their addresses in RLOCK_REDLOCK_SERVERS), the
 * record of errors escaping the unmodified tests (escapes.ts), and, for our adapted copy only,
 * how to read who holds a lock (rlock's lock is Redisson's hash, not redlock's string).
 */

import type { Cluster, Redis } from 'ioredis';
import './escapes';

/**
 * The tests never close their clients, so their worker would not exit and AVA 6 would report
 * it after its timeout: the worker exits once its tests completed (AVA's documented hook,
 * which only its ES module entry exports, hence the import() that TypeScript leaves as is).
 */
const importModule = new Function('specifier', 'return import(specifier)') as (specifier: string) => Promise<any>;
void importModule('ava').then((ava) => ava.registerCompletionHandler(() => process.exit()));

interface Endpoint {
  host: string;
  port: number;
}

function endpoints(): Record<string, Endpoint> {
  const text = process.env.RLOCK_REDLOCK_SERVERS;
  if (!text) throw new Error('RLOCK_REDLOCK_SERVERS is not set: run these tests through upstream/redlock/run.ts');
  return JSON.parse(text);
}

/** The address of one server (or of one node of a cluster) the launcher started. */
export function endpoint(name: string): Endpoint {
  const found = endpoints()[name];
  if (!found) throw new Error(`the launcher started no server named ${name}`);
  return found;
}

/** An address nothing listens on (the "redis is unreachable" test). */
export function unusedEndpoint(): Endpoint {
  return endpoint('unused');
}

/**
 * What redlock's tests read with `GET key`: the lock's holder, null when the key is absent,
 * and the plain value of a key that is not a lock (those the tests SET). The holder is the one
 * field of the lock's hash (Redisson's layout; `RLOCK.INFO` shows it too, but a Cluster client
 * of ioredis does not know that command's key and would route it through a MOVED, adding a
 * round trip to reads that the tests time to within 100 ms).
 */
export async function holderOf(redis: Redis | Cluster, key: string): Promise<string | null> {
  try {
    const fields = await redis.hkeys(key);
    return fields.length ? fields[0] : null;
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('WRONGTYPE')) return redis.get(key);
    throw err;
  }
}
