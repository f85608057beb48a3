// Exact-duplicate index: payload digest → the first capture with that payload,
// which a later identical capture refers to in its WARC `revisit` record
// (WARC/1.1 §6.7.2, profile identical-payload-digest: WARC-Refers-To-Target-URI,
// WARC-Refers-To-Date, WARC-Refers-To).
//
// Key: the labelled digest exactly as written in WARC-Payload-Digest (e.g.
// `sha1:BASE32…` or `sha256:BASE32…`, src/warc/digest.ts; the label keeps the algorithms apart), UTF-8. Value: version byte 1, then
// the date (8 bytes, ms since the epoch, BE), then uri and record id as
// UTF-8 separated by one NUL (neither may contain NUL: URIs are percent-
// encoded, record ids are `<urn:uuid:…>`).
import type { BatchOp, Sublevel } from '../store/db.js';

export interface DigestRecord {
  /** Target URI of the first capture. */
  uri: string;
  /** Its WARC-Date. */
  date: Date;
  /** Its WARC-Record-ID (`<urn:uuid:…>`). */
  recordId: string;
}

const VERSION = 1;

export function encodeDigestRecord(r: DigestRecord): Buffer {
  const uri = Buffer.from(r.uri.replace(/\0/g, ''), 'utf8');
  const id = Buffer.from(r.recordId.replace(/\0/g, ''), 'utf8');
  const out = Buffer.allocUnsafe(1 + 8 + uri.length + 1 + id.length);
  out[0] = VERSION;
  out.writeDoubleBE(r.date.getTime(), 1);
  uri.copy(out, 9);
  out[9 + uri.length] = 0;
  id.copy(out, 10 + uri.length);
  return out;
}

/** Inverse of encodeDigestRecord; null for a value it did not write. */
export function decodeDigestRecord(v: Buffer): DigestRecord | null {
  if (v.length < 10 || v[0] !== VERSION) return null;
  const ms = v.readDoubleBE(1);
  const nul = v.indexOf(0, 9);
  if (nul < 0 || !Number.isFinite(ms)) return null;
  return { uri: v.toString('utf8', 9, nul), date: new Date(ms), recordId: v.toString('utf8', nul + 1) };
}

export class DigestStore {
  constructor(private readonly sub: Sublevel) {}

  /** The first capture recorded for `digest`, if any. */
  async get(digest: string): Promise<DigestRecord | undefined> {
    const v = await this.sub.get(Buffer.from(digest, 'utf8'));
    return v === undefined ? undefined : decodeDigestRecord(v) ?? undefined;
  }

  /** The write recording `rec` as the capture for `digest`, for the caller's atomic batch. */
  putOp(digest: string, rec: DigestRecord): BatchOp {
    return { type: 'put', sublevel: this.sub, key: Buffer.from(digest, 'utf8'), value: encodeDigestRecord(rec) };
  }

  async put(digest: string, rec: DigestRecord): Promise<void> {
    await this.sub.put(Buffer.from(digest, 'utf8'), encodeDigestRecord(rec));
  }

  /**
   * Records `rec` unless a capture is already recorded; returns the one that
   * is (the original to refer to) or undefined when `rec` became it. Callers
   * that index several pages concurrently must serialise per digest (or use
   * get + putOp in their own ordered batch): this is a read then a write.
   */
  async putIfAbsent(digest: string, rec: DigestRecord): Promise<DigestRecord | undefined> {
    const prev = await this.get(digest);
    if (prev !== undefined) return prev;
    await this.put(digest, rec);
    return undefined;
  }
}
