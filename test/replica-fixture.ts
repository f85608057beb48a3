// A FrontierReplica on its own (src/crawl/frontier-replica.ts), for the tests of held replicas, catch-up and
// pass-on: a frontier with nothing in memory and a DRUM whose exclusive section runs at once, unless given.
import { FrontierReplica, type FrontierReplicaComponents } from '../src/crawl/frontier-replica.js';
import { silentLogger } from '../src/util/log.js';

/** `promoted`: promoted URLs are pushed to it (promotion does nothing else). Defaults: 1 extra copy, promotion after 20 ms. */
export function replicaAlone(store: FrontierReplicaComponents['store'], over: Partial<Omit<FrontierReplicaComponents, 'store'>> & { promoted?: string[] } = {}): FrontierReplica {
  const { promoted, ...rest } = over;
  return new FrontierReplica({
    store, frontier: { allHosts: () => [].values() as never }, drum: { exclusive: <T>(fn: () => Promise<T>) => fn() } as never,
    replicas: 1, promoteAfterMs: 20, log: silentLogger, promote: async (urls) => { promoted?.push(...urls.map((u) => u.url)); },
    ...rest,
  });
}
