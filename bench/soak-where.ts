// Where the mesh soak's lost URLs are (bench/mesh-soak.ts): after every agent has stopped, each agent's
// data dir is opened and each lost URL looked up in it — queued in its frontier, held as a replica
// (`standby`), waiting in its outbox or replica outbox for a peer, or known to its seen-set (and in which
// state). A URL found queued somewhere was not lost by the mesh: it was still to be crawled when the bench
// stopped (a finish bound too short, or an agent that left with its queue kept). One found nowhere, or only
// as "seen", is lost.
import { openStore } from '../src/store/db.js';
import { hostKey, prefixEnd, seenKey } from '../src/store/keys.js';
import { decodeEntry } from '../src/frontier/frontier.js';
import { seenStateOf } from '../src/seen/state.js';

/** Per URL: where it was found, as `agent:place` (place: frontier, standby, outbox, replicas, seen=<state>). */
export type Whereabouts = Map<string, string[]>;

export async function locate(urls: readonly string[], dirs: ReadonlyArray<{ name: string; dir: string }>): Promise<Whereabouts> {
  const out: Whereabouts = new Map(urls.map((u) => [u, []]));
  if (urls.length === 0) return out;
  const needles = urls.map((u) => ({ url: u, bytes: Buffer.from(u, 'utf8'), host: new URL(u).hostname }));
  for (const { name, dir } of dirs) {
    let store;
    try { store = await openStore(dir); } catch { continue; } // never started, or still locked
    try {
      for (const n of needles) {
        const hk = hostKey(n.host);
        const sk = seenKey(hk, n.url);
        const where = out.get(n.url)!;
        for (const [, v] of await store.frontier.iterator({ gte: hk, lt: prefixEnd(hk) }).all()) {
          if (decodeEntry(v, n.host)?.url === n.url) { where.push(`${name}:frontier`); break; }
        }
        if (await store.standby.get(sk)) where.push(`${name}:standby`);
        const seen = await store.seen.get(sk);
        if (seen) where.push(`${name}:seen=${seenStateOf(seen)}`);
      }
      // Outbox items carry the whole URL: a byte search over their values.
      for (const [sub, label] of [[store.outbox, 'outbox'], [store.replicas, 'replicas']] as const) {
        for (const [, v] of await sub.iterator().all()) {
          for (const n of needles) if (v.includes(n.bytes)) out.get(n.url)!.push(`${name}:${label}`);
        }
      }
    } finally {
      await store.close();
    }
  }
  return out;
}
