// The operator's seeds (`--seed`, `ubicrawl seed`, POST /seeds): each URL made
// a crawl candidate marked as a seed (it widens the scope: docs/scope.md),
// warned about or refused when it names an internal address
// (docs/politeness.md), then routed to its owner like any URL.
import type { SeedResult } from '../api/backend.js';
import { normalizeUrl, hostOf } from '../url/normalize.js';
import type { Logger } from '../util/log.js';
import type { Admission } from './admission.js';
import type { Candidate } from './candidate.js';
import { BLOCKED, type HostTurn } from './host-turn.js';
import type { Router } from './router.js';

export interface SeedingComponents {
  admission: Pick<Admission, 'candidate' | 'asSeed'>;
  turns: Pick<HostTurn, 'blockedTarget'>;
  router: Pick<Router, 'route'>;
  log: Logger;
  /** The short id of the agent that owns a host (for the answer's `routed`). */
  ownerOf(host: string): string;
  /** The crawl policy's block list, to say why a seed was refused (src/crawl/policy-gate.ts). */
  policy: { blocked(url: string, host: string): boolean };
  /** Seeds given count as begun work, and name the hosts a run that fetched nothing reports (src/crawl/ending.ts). */
  ending: { noteSeeds(hosts: string[]): void };
}

/** Adds crawl seeds; returns how many were accepted for queuing (before the seen check). */
export async function seed(c: SeedingComponents, urls: string[]): Promise<number> {
  const cands: Candidate[] = [];
  for (const u of urls) {
    const cand = c.admission.candidate(u, undefined, 0);
    if (!cand) continue;
    c.admission.asSeed(cand);
    cand.via = 'seed';
    // Queued all the same: the crawl records it as blocked-address without a request.
    const blocked = c.turns.blockedTarget(cand.url);
    if (blocked) c.log.warn({ url: cand.url, reason: blocked.reason }, 'seed is an internal address: not fetched (--allow-address opens a range)');
    cands.push(cand);
  }
  c.ending.noteSeeds(cands.map((cand) => cand.host));
  await c.router.route(cands);
  return cands.length;
}

/** Seeds from the API: an internal address is refused (not queued), and the answer says where each went. */
export async function seedUrls(c: SeedingComponents, urls: string[]): Promise<SeedResult> {
  const rejected: SeedResult['rejected'] = [];
  const cands: Candidate[] = [];
  for (const u of urls) {
    const cand = c.admission.candidate(u, undefined, 0);
    const blocked = cand && c.turns.blockedTarget(cand.url);
    if (blocked) rejected.push({ url: u, reason: BLOCKED, detail: `${blocked.reason}; --allow-address opens a range` });
    else if (cand) { c.admission.asSeed(cand); cand.via = 'seed'; cands.push(cand); }
    else {
      const n = normalizeUrl(u);
      rejected.push({ url: u, reason: !n ? 'not a crawlable http(s) URL' : c.policy.blocked(n, hostOf(n)) ? 'blocked by the crawl policy' : 'out of scope' });
    }
  }
  const routed: Record<string, number> = {};
  for (const cand of cands) { const o = c.ownerOf(cand.host); routed[o] = (routed[o] ?? 0) + 1; }
  c.ending.noteSeeds(cands.map((cand) => cand.host));
  await c.router.route(cands);
  return { accepted: cands.length, rejected, routed };
}
