// Host name resolution for the fetcher. `--resolve` rules (curl syntax) win;
// otherwise the system resolver, with a small TTL cache so a crawl does not ask
// for the same name once per page. (Issue 7 replaces the lookup with an async
// dns.Resolver with per-record TTLs, negative caching and prefetch.)
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { matchResolveRule, type ResolveRule } from '../config.js';

export interface Resolved { address: string; family: 4 | 6 }

export class HostResolver {
  private cache = new Map<string, { at: number; value: Resolved }>();
  constructor(private readonly rules: readonly ResolveRule[], private readonly ttlMs = 5 * 60_000) {}

  async resolve(host: string, port: number): Promise<Resolved> {
    const h = host.startsWith('[') ? host.slice(1, -1) : host;
    const fam = isIP(h);
    if (fam) return { address: h, family: fam as 4 | 6 };
    const rule = matchResolveRule(this.rules, h.toLowerCase(), port);
    if (rule) return { address: rule.address, family: isIP(rule.address) === 6 ? 6 : 4 };
    const hit = this.cache.get(h);
    const now = Date.now();
    if (hit && now - hit.at < this.ttlMs) return hit.value;
    const r = await lookup(h, { verbatim: true });
    const value: Resolved = { address: r.address, family: r.family === 6 ? 6 : 4 };
    this.cache.set(h, { at: now, value });
    return value;
  }
}
