// What an agent remembers about each fetched URL (the `fetches` sublevel, keyed
// by the URL's seen key): enough to answer "when, what status, which content,
// where in the WARC files" without reading the WARCs. One place for the format.

export interface FetchRecord {
  url: string;
  /** Epoch ms the fetch started. */
  at: number;
  status: number;
  /** WARC payload digest (`sha256:…`), when a response was stored. */
  digest?: string;
  /** SimHash of the visible text, 16 hex digits. */
  simhash?: string;
  warc?: { filename: string; offset: number; length: number };
  noindex?: boolean;
  /** Failure kind for fetches that got no response, or why it was not fetched. */
  failure?: string;
  /** Why the response was fetched but not stored (type-not-accepted: --accept-type, docs/scope.md). */
  skipped?: string;
  /** URL this page duplicates (exact digest or near-duplicate SimHash). */
  duplicateOf?: string;
  duplicateKind?: 'exact' | 'near';
  /** Near-duplicates: Hamming distance between this page's SimHash and the one it duplicates. */
  distance?: number;
}

export function encodeFetchRecord(r: FetchRecord): Buffer {
  return Buffer.from(JSON.stringify(r));
}

export function decodeFetchRecord(b: Buffer | undefined): FetchRecord | undefined {
  if (!b) return undefined;
  try {
    const r = JSON.parse(b.toString('utf8')) as FetchRecord;
    return typeof r.url === 'string' && typeof r.at === 'number' ? r : undefined;
  } catch {
    return undefined;
  }
}
