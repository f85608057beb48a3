// Loopback ports for benchmarks and tests that must know an agent's port
// before it starts (a WAN relay forwards to it; the demo prints its API).
import { createServer } from 'node:net';

function tryListen(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(undefined));
    srv.listen(port, '127.0.0.1', () => {
      const bound = (srv.address() as { port: number }).port;
      srv.close(() => resolve(bound));
    });
  });
}

/** A loopback port free at the time of asking (the kernel picks it). */
export async function freePort(): Promise<number> {
  const port = await tryListen(0);
  if (port === undefined) throw new Error('no free loopback port');
  return port;
}

/**
 * The first of `count` consecutive loopback ports free at the time of asking,
 * below the Linux ephemeral range (32768+) so that outgoing connections do not
 * take them meanwhile. Bounded: gives up after 200 tries.
 */
export async function freePortRun(count: number): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const first = 20_000 + Math.floor(Math.random() * (12_000 - count));
    const bound = await Promise.all(Array.from({ length: count }, (_, i) => tryListen(first + i)));
    if (bound.every((p) => p !== undefined)) return first;
  }
  throw new Error(`no run of ${count} free loopback ports found`);
}
