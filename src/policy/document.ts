// The crawl policy: one document that every agent of a mesh holds, persists
// and passes on, so that each applies the same rules whichever agent a URL came
// through (docs/scope.md "Mesh-wide policy"). It carries the crawl scope and URL
// filters, the seed units that widen a `seeds` scope, and the block list
// (takedowns).
//
// Agents change it without a coordinator, partitions included, so the document
// is a state-based CRDT (Shapiro et al., "Conflict-free Replicated Data Types",
// 2011): `mergePolicies` is commutative, associative and idempotent, and every
// agent that has seen the same changes holds the same bytes.
//   - version: a Lamport clock, the highest seen; an edit takes one more.
//   - scope: a last-writer-wins register ordered by (rev, origin, bytes).
//   - seed units: a grow-only set (a seed only ever widens the scope).
//   - blocks: one entry per rule (kind, value), the entry with the highest
//     (rev, removed) winning: an unblock is a tombstone, and a block and an
//     unblock made concurrently leave the rule blocked, the safe side for a
//     takedown. So no block made on either side of a partition is lost.
// Pure: plain data in and out.
import { createHash } from 'node:crypto';
import { SCOPE_MODES, asciiHost, type CrawlScopeConfig, type ScopeMode } from '../scope/crawl-scope.js';

/** What a block names: a host exactly, a domain (the name and every name under it), or a URL pattern (`*` wildcards). */
export type BlockKind = 'host' | 'domain' | 'url';

export interface BlockRule {
  kind: BlockKind;
  /** Host or domain (lower case, punycode), or the URL pattern as given. */
  value: string;
  /** The document version at which this entry was set (blocked or unblocked). */
  rev: number;
  /** An unblock: the rule is kept as a tombstone so that an older copy cannot bring it back. */
  removed: boolean;
  /** When it was set, ms since the epoch (informative). */
  changedAt: number;
  /** Why (a takedown ticket, a complaint); shown by `GET /policy`. */
  reason: string;
}

/** The rules of the policy that come from the crawl's options (src/scope/crawl-scope.ts). */
export type PolicyScope = Pick<CrawlScopeConfig, 'mode' | 'allowHosts' | 'include' | 'exclude' | 'maxDepth' | 'maxPagesPerHost' | 'acceptTypes'>;

export interface PolicyDocument {
  /** Lamport clock: the highest version of every change merged in; 0 before any change. */
  version: number;
  /** When the latest change merged in was made, ms since the epoch (informative). */
  updatedAt: number;
  scope: PolicyScope;
  /** Version at which the scope was last set (0: from the options, never changed through the mesh). */
  scopeRev: number;
  /** Who set it (PeerId or agent name). */
  scopeOrigin: string;
  /** Seed units (registrable domains, or hosts under `--scope host|domain`) that widen a `seeds` scope mesh-wide. */
  seedUnits: string[];
  /** Block entries, tombstones (removed) included. */
  blocks: BlockRule[];
}

/** Bounds a document from a peer must stay within (a hostile member must not make every agent compile a megabyte of regex). */
export const POLICY_LIMITS = Object.freeze({
  maxBytes: 512 * 1024,
  maxBlocks: 10_000,
  maxPatterns: 256,
  maxPatternChars: 1_000,
  maxHosts: 10_000,
  maxSeedUnits: 10_000,
  maxNameChars: 253,
  maxReasonChars: 500,
});

/** The policy an agent holds before any change: its options' scope at version 0. */
export function emptyPolicy(scope: PolicyScope): PolicyDocument {
  return { version: 0, updatedAt: 0, scope: cloneScope(scope), scopeRev: 0, scopeOrigin: '', seedUnits: [], blocks: [] };
}

function cloneScope(s: PolicyScope): PolicyScope {
  return {
    mode: s.mode, allowHosts: [...s.allowHosts], include: [...s.include], exclude: [...s.exclude],
    maxDepth: s.maxDepth, maxPagesPerHost: s.maxPagesPerHost, acceptTypes: [...s.acceptTypes],
  };
}

function canonicalScope(s: PolicyScope): object {
  return {
    mode: s.mode, allowHosts: [...s.allowHosts].sort(), include: s.include, exclude: s.exclude,
    maxDepth: s.maxDepth, maxPagesPerHost: s.maxPagesPerHost, acceptTypes: [...s.acceptTypes].sort(),
  };
}

const ruleKey = (r: Pick<BlockRule, 'kind' | 'value'>): string => `${r.kind} ${r.value}`;
const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Total order of two entries of one rule: the later rev, then a block over an unblock, then the bytes. */
function ruleOrder(a: BlockRule, b: BlockRule): number {
  if (a.rev !== b.rev) return a.rev - b.rev;
  if (a.removed !== b.removed) return a.removed ? -1 : 1;
  return cmp(JSON.stringify(a), JSON.stringify(b));
}

/** Total order of two scope registers: rev, origin, then the canonical bytes. */
function scopeOrder(a: PolicyDocument, b: PolicyDocument): number {
  if (a.scopeRev !== b.scopeRev) return a.scopeRev - b.scopeRev;
  if (a.scopeOrigin !== b.scopeOrigin) return cmp(a.scopeOrigin, b.scopeOrigin);
  return cmp(JSON.stringify(canonicalScope(a.scope)), JSON.stringify(canonicalScope(b.scope)));
}

/** The join of two documents (see the header): what an agent holds after hearing both. */
export function mergePolicies(a: PolicyDocument, b: PolicyDocument): PolicyDocument {
  const scopeFrom = scopeOrder(a, b) >= 0 ? a : b;
  const rules = new Map<string, BlockRule>();
  for (const r of [...a.blocks, ...b.blocks]) {
    const k = ruleKey(r);
    const have = rules.get(k);
    if (have === undefined || ruleOrder(r, have) > 0) rules.set(k, r);
  }
  return {
    version: Math.max(a.version, b.version),
    updatedAt: Math.max(a.updatedAt, b.updatedAt),
    scope: cloneScope(scopeFrom.scope), scopeRev: scopeFrom.scopeRev, scopeOrigin: scopeFrom.scopeOrigin,
    seedUnits: [...new Set([...a.seedUnits, ...b.seedUnits])].sort(),
    blocks: [...rules.values()].map((r) => ({ ...r })).sort((x, y) => cmp(ruleKey(x), ruleKey(y))),
  };
}

/** The canonical bytes of a document: fixed key order, sorted sets, so equal documents digest equally. */
export function encodePolicy(doc: PolicyDocument): Uint8Array {
  const blocks = [...doc.blocks].sort((x, y) => cmp(ruleKey(x), ruleKey(y)));
  return new TextEncoder().encode(JSON.stringify({
    v: 1, version: doc.version, updatedAt: doc.updatedAt,
    scope: canonicalScope(doc.scope), scopeRev: doc.scopeRev, scopeOrigin: doc.scopeOrigin,
    seedUnits: [...doc.seedUnits].sort(),
    blocks: blocks.map((b) => ({ kind: b.kind, value: b.value, rev: b.rev, removed: b.removed, changedAt: b.changedAt, reason: b.reason })),
  }));
}

/** A short digest of the canonical bytes (16 hex digits), carried in heartbeats to compare policies cheaply. */
export function policyDigest(doc: PolicyDocument): string {
  return createHash('sha256').update(encodePolicy(doc)).digest('hex').slice(0, 16);
}

/** What a heartbeat says of its sender's policy: `version.digest`. */
export function policySummary(doc: PolicyDocument): string {
  return `${doc.version}.${policyDigest(doc)}`;
}

/** Parses a heartbeat's policy summary; null when malformed. */
export function parsePolicySummary(s: unknown): { version: number; digest: string } | null {
  if (typeof s !== 'string' || s.length > 40) return null;
  const m = /^(\d{1,15})\.([0-9a-f]{16})$/.exec(s);
  return m ? { version: Number(m[1]), digest: m[2]! } : null;
}

/** The rules in force (tombstones left out). */
export function activeBlocks(doc: PolicyDocument): BlockRule[] {
  return doc.blocks.filter((b) => !b.removed);
}

export type PolicyDecoded = { ok: true; doc: PolicyDocument } | { ok: false; reason: string };

const isInt = (x: unknown, max = Number.MAX_SAFE_INTEGER): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0 && x <= max;
const isStr = (x: unknown, max: number): x is string => typeof x === 'string' && x.length <= max;
const strList = (x: unknown, maxItems: number, maxChars: number): x is string[] =>
  Array.isArray(x) && x.length <= maxItems && x.every((v) => isStr(v, maxChars) && v.length > 0);

/** Whether a host or domain name is plausible as normalised (no spaces, no scheme, no path). */
function isName(s: string): boolean {
  return s.length > 0 && s.length <= POLICY_LIMITS.maxNameChars && /^(\[[0-9a-f:.]+\]|[a-z0-9._-]+)$/.test(s);
}

/** Whether every pattern compiles as a regular expression. */
function compiles(patterns: readonly string[]): boolean {
  try { for (const p of patterns) new RegExp(p); return true; } catch { return false; }
}

/**
 * Strict decoder of a policy from a peer or the store: exact schema, bounded sizes,
 * regular expressions that compile. A refused document changes nothing; the reason
 * is counted by the caller.
 */
export function decodePolicy(bytes: Uint8Array): PolicyDecoded {
  if (bytes.length > POLICY_LIMITS.maxBytes) return { ok: false, reason: 'oversize' };
  let o: unknown;
  try { o = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes)); } catch { return { ok: false, reason: 'json' }; }
  if (typeof o !== 'object' || o === null || Array.isArray(o)) return { ok: false, reason: 'schema' };
  const r = o as Record<string, unknown>;
  if (r.v !== 1) return { ok: false, reason: 'version' };
  if (!isInt(r.version) || !isInt(r.updatedAt) || !isInt(r.scopeRev) || !isStr(r.scopeOrigin, 128)) return { ok: false, reason: 'schema' };
  const s = r.scope as Record<string, unknown> | null;
  if (typeof s !== 'object' || s === null || Array.isArray(s)) return { ok: false, reason: 'schema' };
  if (!SCOPE_MODES.includes(s.mode as ScopeMode)) return { ok: false, reason: 'schema' };
  if (!strList(s.allowHosts, POLICY_LIMITS.maxHosts, POLICY_LIMITS.maxNameChars)) return { ok: false, reason: 'schema' };
  if (!strList(s.include, POLICY_LIMITS.maxPatterns, POLICY_LIMITS.maxPatternChars)) return { ok: false, reason: 'schema' };
  if (!strList(s.exclude, POLICY_LIMITS.maxPatterns, POLICY_LIMITS.maxPatternChars)) return { ok: false, reason: 'schema' };
  if (!strList(s.acceptTypes, POLICY_LIMITS.maxPatterns, 255)) return { ok: false, reason: 'schema' };
  if (!isInt(s.maxDepth, 1e6) || !isInt(s.maxPagesPerHost, 1e12)) return { ok: false, reason: 'schema' };
  if (!compiles(s.include) || !compiles(s.exclude)) return { ok: false, reason: 'pattern' };
  if (!strList(r.seedUnits, POLICY_LIMITS.maxSeedUnits, POLICY_LIMITS.maxNameChars) || !r.seedUnits.every(isName)) return { ok: false, reason: 'schema' };
  if (!Array.isArray(r.blocks) || r.blocks.length > POLICY_LIMITS.maxBlocks) return { ok: false, reason: 'schema' };
  const blocks: BlockRule[] = [];
  const keys = new Set<string>();
  for (const b of r.blocks as unknown[]) {
    const rule = parseRule(b);
    if (rule === null || rule.rev > r.version) return { ok: false, reason: 'schema' };
    if (keys.has(ruleKey(rule))) return { ok: false, reason: 'schema' };
    keys.add(ruleKey(rule));
    blocks.push(rule);
  }
  if (r.scopeRev > r.version) return { ok: false, reason: 'schema' };
  return {
    ok: true,
    doc: {
      version: r.version, updatedAt: r.updatedAt,
      scope: {
        mode: s.mode as ScopeMode, allowHosts: s.allowHosts, include: s.include, exclude: s.exclude,
        maxDepth: s.maxDepth, maxPagesPerHost: s.maxPagesPerHost, acceptTypes: s.acceptTypes,
      },
      scopeRev: r.scopeRev, scopeOrigin: r.scopeOrigin,
      seedUnits: r.seedUnits, blocks,
    },
  };
}

function parseRule(b: unknown): BlockRule | null {
  if (typeof b !== 'object' || b === null || Array.isArray(b)) return null;
  const r = b as Record<string, unknown>;
  if (r.kind !== 'host' && r.kind !== 'domain' && r.kind !== 'url') return null;
  if (!isStr(r.value, POLICY_LIMITS.maxPatternChars) || !isInt(r.rev) || typeof r.removed !== 'boolean') return null;
  if (!isInt(r.changedAt) || !isStr(r.reason, POLICY_LIMITS.maxReasonChars)) return null;
  if (r.kind !== 'url' && !isName(r.value)) return null;
  if (r.kind === 'url' && !/^https?:\/\//i.test(r.value)) return null;
  return { kind: r.kind, value: r.value, rev: r.rev, removed: r.removed, changedAt: r.changedAt, reason: r.reason };
}

/** What an operator's argument names (`ubicrawl block ARG`), before it is given a version. */
export type BlockTarget = Pick<BlockRule, 'kind' | 'value'>;

/**
 * The rule an operator's argument names: an argument with a scheme is a URL
 * pattern (`*` matches any run of characters); `=name` is that host only; any
 * other name is a domain, the name and every name under it — what a takedown of
 * `example.org` means. Throws a one-line error for what is none.
 */
export function blockTargetOf(arg: string): BlockTarget {
  const a = arg.trim();
  if (a.length === 0) throw new Error('block: empty argument');
  if (a.includes('://')) {
    if (a.length > POLICY_LIMITS.maxPatternChars) throw new Error(`block: URL pattern longer than ${POLICY_LIMITS.maxPatternChars} characters`);
    if (!/^https?:\/\//i.test(a)) throw new Error(`block: only http and https URL patterns are crawled: ${a}`);
    return { kind: 'url', value: a };
  }
  const hostOnly = a.startsWith('=');
  const name = asciiHost(hostOnly ? a.slice(1) : a.replace(/^\*\./, ''));
  if (!isName(name)) throw new Error(`block: not a host name, domain or http(s) URL pattern: ${arg}`);
  return { kind: hostOnly ? 'host' : 'domain', value: name };
}

/** The next version of a document, authored at `now`. */
function bump(doc: PolicyDocument, now: number): PolicyDocument {
  return { ...doc, version: doc.version + 1, updatedAt: Math.max(now, doc.updatedAt), scope: cloneScope(doc.scope), seedUnits: [...doc.seedUnits], blocks: doc.blocks.map((b) => ({ ...b })) };
}

/** The document with a block in force; the same document (no new version) when it is already. */
export function withBlock(doc: PolicyDocument, target: BlockTarget, now: number, reason = ''): PolicyDocument {
  if (reason.length > POLICY_LIMITS.maxReasonChars) throw new Error(`block: reason longer than ${POLICY_LIMITS.maxReasonChars} characters`);
  const have = doc.blocks.find((b) => ruleKey(b) === ruleKey(target));
  if (have !== undefined && !have.removed) return doc;
  if (have === undefined && doc.blocks.length >= POLICY_LIMITS.maxBlocks) throw new Error(`block: the block list holds ${POLICY_LIMITS.maxBlocks} rules already`);
  const next = bump(doc, now);
  next.blocks = next.blocks.filter((b) => ruleKey(b) !== ruleKey(target));
  next.blocks.push({ kind: target.kind, value: target.value, rev: next.version, removed: false, changedAt: now, reason });
  return next;
}

/** The document with a block lifted (a tombstone); the same document when it was not in force. */
export function withoutBlock(doc: PolicyDocument, target: BlockTarget, now: number): PolicyDocument {
  const have = doc.blocks.find((b) => ruleKey(b) === ruleKey(target));
  if (have === undefined || have.removed) return doc;
  const next = bump(doc, now);
  next.blocks = next.blocks.map((b) => (ruleKey(b) === ruleKey(target) ? { ...b, rev: next.version, removed: true, changedAt: now } : b));
  return next;
}

/** The document with more seed units; the same document when none is new. */
export function withSeedUnits(doc: PolicyDocument, units: readonly string[], now: number): PolicyDocument {
  const have = new Set(doc.seedUnits);
  const fresh = [...new Set(units)].filter((u) => !have.has(u) && isName(u));
  if (fresh.length === 0) return doc;
  if (doc.seedUnits.length + fresh.length > POLICY_LIMITS.maxSeedUnits) throw new Error(`seed: the policy holds ${POLICY_LIMITS.maxSeedUnits} seed units already`);
  const next = bump(doc, now);
  next.seedUnits = [...doc.seedUnits, ...fresh].sort();
  return next;
}

/** Whether two scopes are the same rules (order of sets aside). */
export function sameScope(a: PolicyScope, b: PolicyScope): boolean {
  return JSON.stringify(canonicalScope(a)) === JSON.stringify(canonicalScope(b));
}

/** The document with other scope rules, set by `origin`; the same document when equal. */
export function withScope(doc: PolicyDocument, scope: PolicyScope, origin: string, now: number): PolicyDocument {
  if (sameScope(doc.scope, scope)) return doc;
  const next = bump(doc, now);
  next.scope = cloneScope(scope);
  next.scopeRev = next.version;
  next.scopeOrigin = origin;
  return next;
}

/**
 * The document with the scope of this agent's options set by `origin`, for the
 * agent that starts a crawl (alone, or the first of a mesh): its options win over
 * any scope at version 0 (every agent's options) and over one it held before a
 * restart. The same document when that scope is already set, at a version.
 */
export function withOptionsScope(doc: PolicyDocument, scope: PolicyScope, origin: string, now: number): PolicyDocument {
  if (doc.scopeRev > 0 && sameScope(doc.scope, scope)) return doc;
  const next = bump(doc, now);
  next.scope = cloneScope(scope);
  next.scopeRev = next.version;
  next.scopeOrigin = origin;
  return next;
}
