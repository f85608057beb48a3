// The fields of the `warcinfo` record that opens every WARC file (WARC/1.1 §6.2;
// field names from the spec's annex and as Heritrix writes them: software, ip,
// hostname, format, conformsTo, operator, isPartOf, description, robots,
// http-header-user-agent), plus how duplicates were recorded. docs/warc.md lists them.
import { hostname as osHostname, networkInterfaces } from 'node:os';
import type { DigestAlgo } from './digest.js';

export interface WarcinfoSettings {
  software: string;
  userAgent: string;
  /** Who ran the crawl (`--operator`); left out when empty. */
  operator?: string;
  /** The crawl this file belongs to (the mesh's crawl id). */
  crawlId: string;
  description?: string;
  digest: DigestAlgo;
  /** Identical payloads written as revisit records. */
  exactDedup: boolean;
  /** Near-duplicates noted in metadata records (SimHash distance ≤ maxDistance). */
  nearDedup: boolean;
  maxDistance: number;
  /** Conditional revisits: 304s written as server-not-modified revisits. */
  recrawl?: boolean;
}

/** The machine's first non-internal address (IPv4 preferred), as Heritrix's `ip`; undefined without one. */
export function machineAddress(): string | undefined {
  let v6: string | undefined;
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) {
      if (a.internal) continue;
      if (a.family === 'IPv4') return a.address;
      v6 ??= a.address;
    }
  }
  return v6;
}

export function warcinfoFields(s: WarcinfoSettings): Record<string, string> {
  const out: Record<string, string> = { software: s.software };
  const ip = machineAddress();
  if (ip) out.ip = ip;
  out.hostname = osHostname();
  out.format = 'WARC File Format 1.1';
  out.conformsTo = 'https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/';
  if (s.operator && s.operator.trim()) out.operator = s.operator.trim();
  out.isPartOf = s.crawlId;
  out.description = s.description && s.description.trim()
    ? s.description.trim()
    : `ubicrawl crawl "${s.crawlId}": HTTP(S) responses and requests as sent and received, bodies as received (transfer coding removed)`;
  out.robots = 'obey';
  out['http-header-user-agent'] = s.userAgent;
  // Not in the annex: how a reader tells a revisit from a missing capture (docs/warc.md "warcinfo").
  out['payload-digest'] = `${s.digest}, base32 (WARC-Payload-Digest and WARC-Block-Digest)`;
  out['duplicates'] = s.exactDedup
    ? `identical payloads after the first are revisit records, profile http://netpreserve.org/warc/1.1/revisit/identical-payload-digest, keyed by WARC-Payload-Digest (${s.digest})`
    : 'every payload is stored in full (no revisit records for identical payloads)';
  out['near-duplicates'] = s.exactDedup && s.nearDedup
    ? `stored in full, with a metadata record (near-duplicate-of, hamming-distance, simhash) when a 64-bit SimHash is within ${s.maxDistance} bits of an earlier page's`
    : 'not detected';
  if (s.recrawl) out['not-modified'] = 'a 304 to a conditional revisit is a revisit record, profile http://netpreserve.org/warc/1.1/revisit/server-not-modified';
  return out;
}
