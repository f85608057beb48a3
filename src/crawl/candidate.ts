// The two shapes every pipeline component shares: a URL on its way into the
// frontier (a candidate) and what the agent keeps per host in the frontier.
import type { NewUrl } from '../frontier/frontier.js';
import type { RobotsEntry } from '../robots/cache.js';
import { newHostPoliteness, type HostPoliteness } from '../politeness/host.js';

/** A URL on its way into the frontier. */
export interface Candidate extends NewUrl {
  key: Buffer;
  /** Found as a link on a page (or a redirect's target): counts as an in-link (src/frontier/inlinks.ts). */
  inlink?: boolean;
  /** A sitemap's cross-submit grant (sitemap/grants.ts), travelling with it to its owner. */
  grant?: string;
  /** Where it came from when not from one of our pages (a peer, a promotion, a seed): logged at debug when queued, to trace a page fetched twice. */
  via?: string;
}

export interface HostData {
  robots: Map<string, RobotsEntry>;
  /** Adaptive politeness (src/politeness/host.ts): the one source of the host's delays, backoff, pauses and parking. */
  polite: HostPoliteness;
  /** DNS prefetch for this host is not asked again before this epoch ms. */
  dnsCheckAt: number;
  /** Responses received from this host. */
  pages: number;
  /** Fetches started for this host's URLs, retries not counted: what a page budget counts (exact, as the host is held while it fetches). */
  budgetUsed: number;
  errors: Record<string, number>;
  /** The last few fetches, newest last (for the API's host view). */
  recent: RecentFetch[];
  /** Paused by the operator (POST /hosts/:host/pause): kept across restarts and handoffs (src/crawl/host-state.ts). */
  operatorPaused?: boolean;
  /** Operator overrides (PUT /hosts/:host/policy); null = the crawl's default. */
  policy: { minDelayMs: number | null; pageBudget: number | null };
  /** URLs taken from the frontier and not yet acknowledged (a handoff waits for them). */
  pendingAcks: number;
  /** Another agent told us it settled some of this host's URLs: check the seen-set before fetching. */
  checkSeen: boolean;
  /** robots.txt fetches in a row that found it unreachable (5xx, 429, network): its URLs wait while this is within the retry limit. */
  robotsFailures: number;
  /**
   * Restored with the host's state (src/crawl/host-state.ts): robots.txt was given up on after its retries
   * until this epoch ms; an origin not asked since counts as unreachable until then.
   */
  robotsGaveUpUntil?: number;
  /** A robots.txt exchange under way: the redirect hop its next turn requests (RFC 9309 §2.3.1.2). */
  robotsHop?: { origin: string; target: string; hop: number };
}

export interface RecentFetch { url: string; status: number | null; at: number; durationMs: number | null; error: string | null }

/** Whether the host's robots.txt is given up on: unreachable after its retries (RFC 9309 §2.3.1.4), `maxRetries` the crawl's. */
export function robotsGivenUp(d: HostData, maxRetries: number): boolean {
  return d.robotsFailures > maxRetries;
}

/**
 * Until when the host's robots.txt stays given up on (`robotsGivenUp`), as restored with its state; 0 when its
 * retries are not used up.
 */
export function robotsGivenUpUntil(d: HostData, maxRetries: number): number {
  return robotsGivenUp(d, maxRetries) ? d.robotsGaveUpUntil ?? 0 : 0;
}

export function newHostData(): HostData {
  return {
    robots: new Map(), polite: newHostPoliteness(), dnsCheckAt: 0, pages: 0, budgetUsed: 0, errors: {}, recent: [],
    policy: { minDelayMs: null, pageBudget: null }, pendingAcks: 0, checkSeen: false, robotsFailures: 0,
  };
}
