/**
 * The messages of a connection's `__rlock__` channel (docs/notify.md):
 * `<event> <type> <value> <key-length> <key> <owner>`, binary-safe.
 */

export interface Message {
  event: string;
  type: string;
  value: string;
  key: string;
  owner: string;
}

export function parseMessage(payload: Buffer): Message | null {
  const fields: string[] = [];
  let at = 0;
  for (let i = 0; i < 4; i++) {
    const space = payload.indexOf(0x20, at);
    if (space < 0) return null;
    fields.push(payload.toString('latin1', at, space));
    at = space + 1;
  }
  const [event, type, value, length] = fields;
  if (!/^\d+$/.test(length)) return null;
  const keyLength = Number(length);
  if (at + keyLength > payload.length) return null;
  const key = payload.toString('utf8', at, at + keyLength);
  at += keyLength;
  let owner = '';
  if (at < payload.length) {
    if (payload[at] !== 0x20) return null;
    owner = payload.toString('utf8', at + 1);
  }
  return { event, type, value, key, owner };
}
