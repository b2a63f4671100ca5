/** Redis Cluster's hash slot of a key: CRC16 (XMODEM) of the key, or of its `{hash tag}`, mod 16384. */

const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

function crc16(bytes: Buffer): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff];
  return crc;
}

export function keySlot(key: string): number {
  let bytes = Buffer.from(key);
  const open = bytes.indexOf('{');
  if (open >= 0) {
    const close = bytes.indexOf('}', open + 1);
    if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  }
  return crc16(bytes) % 16384;
}

/**
 * The slots a node serves and those it is migrating away, from its `CLUSTER NODES` line
 * (`myself`): `0-5460`, `[93->-<node id>]` migrating, `[93-<-<node id>]` importing.
 */
export function ownSlots(nodes: string): { serves(slot: number): boolean; migrating: Set<number> } {
  const line = nodes.split('\n').find((l) => l.split(' ')[2]?.split(',').includes('myself')) ?? '';
  const ranges: Array<[number, number]> = [];
  const migrating = new Set<number>();
  for (const field of line.trim().split(' ').slice(8)) {
    const moving = /^\[(\d+)->-/.exec(field);
    if (moving) migrating.add(Number(moving[1]));
    else if (/^\d+(-\d+)?$/.test(field)) {
      const [first, last = first] = field.split('-').map(Number);
      ranges.push([first, last]);
    }
  }
  return { serves: (slot) => ranges.some(([a, b]) => a <= slot && slot <= b), migrating };
}
