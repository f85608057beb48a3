// Reads a WARC file with warcio.js (HTTP parsing off, so each block is as stored) and
// recomputes both digests of every record: the check the Python tools make.
import assert from 'node:assert/strict';
import { createReadStream } from 'node:fs';
import { WARCParser } from 'warcio';
import { digestMatches } from '../src/warc/digest.js';

export interface WarcioRecord {
  type: string;
  headers: Record<string, string>;
  /** Repeated WARC header names are joined by warcio; warc-fields bodies are given whole here. */
  block: Buffer;
}

/** Every record of the file, digests verified (a revisit's payload digest names its original: not recomputed). */
export async function warcioRecordsVerified(file: string): Promise<WarcioRecord[]> {
  const out: WarcioRecord[] = [];
  for await (const rec of new WARCParser(createReadStream(file), { parseHttp: false })) {
    const block = Buffer.from(await rec.readFully(false));
    const bd = rec.warcHeaders.headers.get('WARC-Block-Digest');
    assert.ok(bd && digestMatches(bd, block), `${file}: ${rec.warcType} ${rec.warcTargetURI}: WARC-Block-Digest ${bd}`);
    const pd = rec.warcHeaders.headers.get('WARC-Payload-Digest');
    if (pd && rec.warcType !== 'revisit') {
      const http = (rec.warcContentType ?? '').startsWith('application/http');
      const payload = http ? block.subarray(block.indexOf('\r\n\r\n') + 4) : block;
      assert.ok(digestMatches(pd, payload), `${file}: ${rec.warcType}: WARC-Payload-Digest ${pd}`);
    }
    // warcio.js keeps parsed header names lower-cased (a fetch Headers): looked up here whatever the case.
    const lower: Record<string, string> = {};
    for (const [k, v] of rec.warcHeaders.headers as unknown as Iterable<[string, string]>) lower[k.toLowerCase()] = v;
    const headers = new Proxy(lower, { get: (t, name) => (typeof name === 'string' ? t[name.toLowerCase()] : undefined) });
    out.push({ type: rec.warcType ?? '', headers, block });
  }
  return out;
}
