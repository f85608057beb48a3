// How a run ended, for the operator (docs/politeness.md "Ending a run"): when
// the whole crawl fetched no page, why its hosts failed — the seeds' hosts
// first — so that `ubicrawl join` can say so in one line and exit 1 instead of
// ending as if all went well. In a mesh the agent that crawled a host has the
// reason; an agent whose seeds all went to other agents names their owners.
import type { Frontier, HostState } from '../frontier/frontier.js';
import type { DnsError } from '../fetch/dns.js';
import type { HostData } from './candidate.js';

export interface HostFailure {
  host: string;
  reason: string;
  /** The host came from a seed given to this agent. */
  seed: boolean;
}

export interface NothingFetched {
  /** Hosts this agent crawled that failed, seeds first (at most a few). */
  failures: HostFailure[];
  /** Seed hosts given here that other agents crawl: host → owner's short id. */
  elsewhere: { host: string; owner: string }[];
}

export interface RunEndingComponents {
  frontier: Pick<Frontier<HostData>, 'allHosts' | 'host'>;
  /** The resolver's last failure for a name (src/fetch/dns.ts). */
  dnsFailure(host: string): DnsError | undefined;
  owns(host: string): boolean;
  /** Short id of the host's owner. */
  ownerOf(host: string): string;
}

const LISTED = 5;

export class RunEnding {
  private readonly seedHosts = new Set<string>();
  /** Seed hosts another agent owned when they were given here: their owner then (it may leave before we end). */
  private readonly seedOwners = new Map<string, string>();

  constructor(private readonly c: RunEndingComponents) {}

  /** Seeds were given to this agent in this run. */
  get began(): boolean { return this.seedHosts.size > 0; }

  /** Hosts of seeds given to this agent (command line, API). */
  noteSeeds(hosts: Iterable<string>): void {
    for (const h of hosts) {
      this.seedHosts.add(h);
      if (!this.c.owns(h)) this.seedOwners.set(h, this.c.ownerOf(h));
    }
  }

  /**
   * Called at the end with the pages the whole crawl fetched (every member's
   * count): undefined when any page was fetched, or when nothing failed here and
   * no seed went elsewhere (a run with nothing left to do).
   */
  nothingFetched(crawlPages: number): NothingFetched | undefined {
    if (crawlPages > 0) return undefined;
    const failures: HostFailure[] = [];
    const elsewhere: NothingFetched['elsewhere'] = [];
    for (const host of this.seedHosts) {
      const ours = this.c.owns(host);
      const h = ours ? this.c.frontier.host(host) : undefined;
      const reason = h ? this.failureOf(h) : undefined;
      if (reason) { failures.push({ host, reason, seed: true }); continue; }
      // Ours now but not when it was given here: its owner then ended its run first (and took the host's outcome with it).
      const owner = ours ? this.seedOwners.get(host) : this.c.ownerOf(host);
      if (owner !== undefined) elsewhere.push({ host, owner });
    }
    for (const h of this.c.frontier.allHosts()) {
      if (failures.length >= LISTED) break;
      if (this.seedHosts.has(h.name)) continue;
      const reason = this.failureOf(h);
      if (reason) failures.push({ host: h.name, reason, seed: false });
    }
    if (failures.length === 0 && elsewhere.length === 0) return undefined;
    return { failures: failures.slice(0, LISTED), elsewhere: elsewhere.slice(0, LISTED) };
  }

  /** Why nothing came from a host, when its URLs failed in this run (URLs still queued are deferred, not failed). */
  private failureOf(h: HostState<HostData>): string | undefined {
    const p = h.data.polite;
    if (h.queued > 0 && !p.parked) return undefined;
    const dns = this.c.dnsFailure(h.name);
    if (dns) return dns.permanent ? `does not resolve (DNS ${dns.code})` : `DNS lookup failed (${dns.code})`;
    if (p.parked) return p.parkReason === 'dns-permanent' ? 'does not resolve (permanent DNS failure: NXDOMAIN or no address)' : `parked: ${p.parkReason ?? 'failing'}`;
    for (const e of h.data.robots.values()) if (e.verdict === 'unreachable') return `robots.txt unreachable${e.status ? ` (HTTP ${e.status})` : ''}: nothing may be fetched (RFC 9309 §2.3.1.4)`;
    const kinds = Object.entries(h.data.errors).sort((a, b) => b[1] - a[1]);
    if (kinds.length > 0) return kinds.map(([k, n]) => `${k} ×${n}`).join(', ');
    return undefined;
  }
}

/** The one line `ubicrawl join` prints when nothing was fetched. */
export function describeNothingFetched(n: NothingFetched): string {
  const parts = n.failures.map((f) => `${f.host}: ${f.reason}`);
  for (const e of n.elsewhere) parts.push(`seed host ${e.host} is crawled by agent ${e.owner} (its summary says why)`);
  return `no page fetched: ${parts.join('; ')}`;
}
