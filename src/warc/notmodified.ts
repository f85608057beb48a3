// The WARC record for a 304 Not Modified answer to a conditional revisit:
// a `revisit` record with the server-not-modified profile (WARC/1.1 §6.7.3).
// Its block is the 304's HTTP header only; it refers to the earlier capture by
// URI and date (WARC-Refers-To-Target-URI, WARC-Refers-To-Date) and repeats
// that capture's payload digest when it is known, so replay tools can find the
// payload. One small builder: encoding is encodeRevisit's (records.ts).
import type { HeaderList, RevisitInput, WireHeads } from './records.js';

export interface NotModifiedInput {
  url: string;
  /** When the 304 was received (its request started). */
  date: Date;
  ip?: string;
  status: number;
  statusText?: string;
  httpVersion?: string;
  responseHeaders: HeaderList;
  /** When the representation the server says is unchanged was captured. */
  capturedAt: Date;
  /** That capture's WARC-Payload-Digest (`sha1:…`/`sha256:…`), when known. */
  payloadDigest?: string;
  /** The 304's head as received (stored instead of a rebuild). */
  wire?: WireHeads;
}

export function serverNotModifiedRevisit(x: NotModifiedInput): RevisitInput {
  return {
    url: x.url,
    date: x.date,
    ...(x.ip ? { ip: x.ip } : {}),
    refersToUri: x.url,
    refersToDate: x.capturedAt,
    payloadDigest: x.payloadDigest ?? '',
    status: x.status,
    ...(x.statusText !== undefined ? { statusText: x.statusText } : {}),
    ...(x.httpVersion !== undefined ? { httpVersion: x.httpVersion } : {}),
    responseHeaders: x.responseHeaders,
    profile: 'server-not-modified',
    ...(x.wire ? { wire: x.wire } : {}),
  };
}
