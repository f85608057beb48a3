// One GET through an undici dispatcher with a plain handler, instead of
// `dispatcher.request()`: request() wraps the body in a Readable and the fetcher
// read it with `for await`, so every page paid for a stream, an async iterator, a
// promise per chunk and an AsyncResource, where all we want is the chunks up to a
// cap. The handler here gets undici's callbacks directly (the interface its own
// RequestHandler implements: onConnect, onHeaders, onData, onComplete, onError)
// and keeps the chunks. Same results as the request() path it replaces: the
// headers parsed by undici's own parseHeaders (lower-case names, repeated fields
// as arrays), 1xx answers skipped, an error before the head rejects, an error
// after it ends the body early (`cut`), and a body past the cap is cut there and
// the connection aborted (docs/performance.md "Crawl").
import type * as undici from 'undici';
import { parseHeaders } from './undici-parts.js';

export interface LeanResponse {
  statusCode: number;
  statusText: string;
  headers: Record<string, string | string[]>;
  chunks: Buffer[];
  /** Bytes in `chunks`. */
  bytes: number;
  /** The body is short: `cap` (cut at the cap) or `error` (the connection failed or was aborted after the head). */
  cut: false | 'cap' | 'error';
}

/** Why an abort was asked for, as undici's own abort errors name it (the fetcher classifies by name and code). */
function abortError(): Error {
  const e = new Error('Request aborted') as NodeJS.ErrnoException;
  e.name = 'AbortError';
  e.code = 'UND_ERR_ABORTED';
  return e;
}

export class LeanGet {
  private abortFn: ((reason: Error) => void) | null = null;
  private reason: Error | null = null;
  private res: LeanResponse | null = null;
  private done = false;
  private resolve!: (r: LeanResponse) => void;
  private reject!: (e: unknown) => void;
  /** Settles with the whole response (or the head and the body up to a cut); rejects on an error before the head. */
  readonly response: Promise<LeanResponse>;

  private cap = 0;

  /**
   * `capOf`: the body cap for the response's Content-Type (bytes kept, at most). `onHead`: called when the final
   * head has been parsed, before any of the body (the fetcher takes the wire capture of the exchange there: once
   * the body is complete, the connection may already carry the origin's next request).
   */
  constructor(private readonly capOf: (contentType: string | undefined) => number, private readonly onHead?: () => void) {
    this.response = new Promise((resolve, reject) => { this.resolve = resolve; this.reject = reject; });
  }

  /** Starts the request on `dispatcher` (headers as a flat name, value list; undici writes Host from the origin). */
  send(dispatcher: undici.Dispatcher, origin: string, path: string, headers: string[]): this {
    try {
      dispatcher.dispatch({ origin, path, method: 'GET', headers }, this as unknown as undici.Dispatcher.DispatchHandler);
    } catch (err) {
      this.onError(err as Error);
    }
    return this;
  }

  /** Aborts the request (a timeout); before the connection is assigned, as soon as it is. */
  abort(): void {
    if (this.done) return;
    this.reason = abortError();
    this.abortFn?.(this.reason);
  }

  onConnect(abort: (reason: Error) => void): void {
    if (this.reason) { abort(this.reason); return; }
    this.abortFn = abort;
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], _resume: () => void, statusMessage: string): boolean {
    if (statusCode < 200) return true; // informational: the final answer follows
    const headers = parseHeaders(rawHeaders) as Record<string, string | string[]>;
    this.res = { statusCode, statusText: statusMessage, headers, chunks: [], bytes: 0, cut: false };
    const ct = headers['content-type'];
    this.cap = this.capOf(Array.isArray(ct) ? ct[0] : ct);
    this.onHead?.();
    return true;
  }

  onData(chunk: Buffer): boolean {
    const res = this.res;
    if (!res || this.done) return false;
    const room = this.cap - res.bytes;
    if (chunk.length >= room) {
      if (room > 0) { res.chunks.push(chunk.subarray(0, room)); res.bytes += room; }
      res.cut = 'cap';
      this.finish();
      this.abortFn?.(abortError()); // the rest is not read: the connection goes
      return false;
    }
    res.chunks.push(chunk);
    res.bytes += chunk.length;
    return true;
  }

  onComplete(): void {
    this.finish();
  }

  onError(err: Error): void {
    if (this.done) return;
    if (!this.res) { this.done = true; this.reject(err); return; }
    this.res.cut = 'error';
    this.finish();
  }

  onUpgrade(): void {
    this.onError(new Error('unexpected upgrade'));
  }

  private finish(): void {
    if (this.done) return;
    this.done = true;
    this.resolve(this.res!);
  }
}
