import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from 'node:test';
import { Server, freePort } from './support';

// The fixture must never take another process's server (or socket) on its port for its own:
// suites run side by side in `make test`.
describe('the test server fixture', () => {
  it('refuses a port held by another redis-server, with a clear error', { timeout: 30_000 }, async () => {
    const foreign = await Server.start();
    try {
      await assert.rejects(Server.start({ port: foreign.port }), /taken by another process/);
    } finally {
      foreign.kill();
    }
  });

  it('refuses a port held by a plain socket that answers nothing', { timeout: 30_000 }, async () => {
    const port = await freePort();
    const listener = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => listener.listen(port, '127.0.0.1', resolve));
    try {
      await assert.rejects(Server.start({ port }), /taken by another process/);
    } finally {
      listener.close();
    }
  });
});
