/** Reading replies the same way whichever library and protocol (RESP2, RESP3) gave them. */

/** Replies as plain values: Buffers of simple strings as strings. */
export function plain(reply: unknown): unknown {
  return Buffer.isBuffer(reply) ? reply.toString() : reply;
}

/** A field of a RESP2 flat array, a RESP3 map or an object reply (undefined when absent). */
export function field(reply: unknown, name: string): unknown {
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) if (String(plain(reply[i])) === name) return plain(reply[i + 1]);
    return undefined;
  }
  if (reply instanceof Map) return plain(reply.get(name));
  if (reply && typeof reply === 'object') return plain((reply as Record<string, unknown>)[name]);
  return undefined;
}
