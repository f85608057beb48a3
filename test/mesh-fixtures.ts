// Heartbeat fixtures shared by the membership tests (test/mesh-membership.test.ts, test/mesh-admission.test.ts).
import type { Heartbeat } from '../src/mesh/wire.js';

/** Two well-formed PeerIds for tests that need ids without nodes. */
export const ID_A = '12D3KooWB92f6rzMWUvLZHsGqKLY1SpAavAFS9ZWYRFQGQZRfN9E';
export const ID_B = '12D3KooWKEipnGNqSH84wnUumPDZRmgz1T7rGv7Rq7fY5Yk1KP1Z';

/** A valid heartbeat of `id`, with `over` replacing any field. */
export function hb(id: string, over: Partial<Heartbeat> = {}): Heartbeat {
  return {
    id, addrs: [`/ip4/127.0.0.1/tcp/4001/p2p/${id}`], capacity: 1, incarnation: 1, state: 'active',
    counters: { fetched: 0, queued: 0, sent: 0, received: 0 }, seq: 1, ...over,
  };
}
