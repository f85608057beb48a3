// Trap hosts: hostile or endless content a robust crawler must survive
// (malformed HTML, a body that never ends, a gzip bomb, a redirect loop, a
// non-HTML content type, endless calendars: docs/synthetic-web.md "Traps"). Each
// trap lives on its own host so per-host politeness does not serialise them.
import zlib from 'node:zlib';
import { Rng, fmix32 } from './prng.js';
import type { TrapHost } from './graph.js';

export interface StaticResponse {
  status: number;
  headers: Record<string, string | number>;
  body: Buffer;
}

const HTML = 'text/html; charset=utf-8';

function html(status: number, body: string, extra: Record<string, string> = {}): StaticResponse {
  const b = Buffer.from(body, 'utf8');
  return { status, headers: { 'content-type': HTML, 'content-length': b.length, ...extra }, body: b };
}

function redirect(status: number, location: string): StaticResponse {
  const b = Buffer.from(`<a href="${location}">moved</a>\n`, 'utf8');
  return { status, headers: { location, 'content-type': HTML, 'content-length': b.length }, body: b };
}

function list(title: string, hrefs: string[]): string {
  return `<!DOCTYPE html>\n<html><head><title>${title}</title></head><body><h1>${title}</h1><ul>\n` +
    hrefs.map((h) => `<li><a href="${h}">${h}</a></li>\n`).join('') + '</ul></body></html>\n';
}

// --- CRC-32 of a run of zero bytes without touching them: the GF(2) matrix
// method zlib's crc32_combine uses (CRC is linear in its input bits), so a
// 1 GiB bomb costs milliseconds to build instead of half a second of hashing
// that would stall the event loop (and skew the request log's timestamps).
function gf2Times(mat: Uint32Array, vec: number): number {
  let sum = 0;
  let i = 0;
  while (vec !== 0) {
    if (vec & 1) sum ^= mat[i];
    vec >>>= 1;
    i++;
  }
  return sum >>> 0;
}

function gf2Square(square: Uint32Array, mat: Uint32Array): void {
  for (let n = 0; n < 32; n++) square[n] = gf2Times(mat, mat[n]);
}

/** crc32(A ‖ B) from crc32(A), crc32(B) and |B|. */
export function crc32Combine(crc1: number, crc2: number, len2: number): number {
  if (len2 <= 0) return crc1 >>> 0;
  const even = new Uint32Array(32);
  const odd = new Uint32Array(32);
  odd[0] = 0xedb88320;
  let row = 1;
  for (let n = 1; n < 32; n++) {
    odd[n] = row;
    row = (row << 1) >>> 0;
  }
  gf2Square(even, odd);
  gf2Square(odd, even);
  let len = len2;
  do {
    gf2Square(even, odd);
    if (len % 2 === 1) crc1 = gf2Times(even, crc1);
    len = Math.floor(len / 2);
    if (len === 0) break;
    gf2Square(odd, even);
    if (len % 2 === 1) crc1 = gf2Times(odd, crc1);
    len = Math.floor(len / 2);
  } while (len !== 0);
  return (crc1 ^ crc2) >>> 0;
}

/**
 * A gzip member (RFC 1952) whose deflate stream (RFC 1951) is one 1 MiB
 * block of zeros compressed with a full flush, repeated: after a full flush
 * the compressor's history is empty, so every repetition is the same bytes
 * and the stream stays valid. Ratio ≈ 1000:1 (deflate's ceiling is ~1032:1).
 */
export function buildGzipBomb(totalBytes: number): Buffer {
  const CHUNK = 1 << 20;
  const zeros = Buffer.alloc(CHUNK);
  const full = { level: 9, finishFlush: zlib.constants.Z_FULL_FLUSH };
  const block = zlib.deflateRawSync(zeros, full);
  const n = Math.floor(totalBytes / CHUNK);
  const rem = totalBytes - n * CHUNK;
  const parts: Buffer[] = [Buffer.from([0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0x02, 0xff])];
  const crcChunk = zlib.crc32(zeros);
  let crc = 0;
  for (let j = 0; j < n; j++) {
    parts.push(block);
    crc = crc32Combine(crc, crcChunk, CHUNK);
  }
  if (rem > 0) {
    parts.push(zlib.deflateRawSync(zeros.subarray(0, rem), full));
    crc = crc32Combine(crc, zlib.crc32(zeros.subarray(0, rem)), rem);
  }
  parts.push(Buffer.from([0x03, 0x00])); // final, empty fixed-Huffman block
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(totalBytes % 4294967296, 4); // ISIZE is the size mod 2^32
  parts.push(trailer);
  return Buffer.concat(parts);
}

const ROBOTS_ALLOW = Buffer.from('User-agent: *\nDisallow:\n', 'utf8');

// Minimal but valid-looking PDF; its text contains an <a href> that a crawler
// must not follow (it is not HTML).
const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n' +
  '2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\n' +
  '% <a href="/should-not-follow">not a link</a>\ntrailer << /Root 1 0 R >>\n%%EOF\n', 'latin1');

const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082',
  'hex');

const MALFORMED = Buffer.from(
  '<!DOCTYPE html>\n<html><head><title>broken <b>title</title><meta charset="utf-8"\n' +
  '<body><div><p>unclosed <a href="/ok/1">one <a href=\'/ok/2\'>two</p></div></span></table>\n' +
  '<a href=/ok/3 class=x"y>three</a><a href="/ok/\u0000bad">nul</a>\n' +
  '<!-- unterminated comment <a href="/in-comment">no</a> -- > still comment? -->\n' +
  '<a href="javascript:alert(1)">js</a><a href="mailto:a@b.test">mail</a><a href="http://[::1">bad url</a>\n' +
  '<a ' + 'x'.repeat(70000) + '="1" href="/ok/1">huge attribute</a>\n' +
  '<script>document.write("<a href=\\"/from-script\\">")</script>\n' +
  '<p>' + '<i>'.repeat(2000) + 'deep nesting' + '\n<a href="/ok/2#frag">again</a>\n' +
  Buffer.from([0xff, 0xfe, 0xc3, 0x28]).toString('latin1') + ' invalid utf-8 bytes\n' +
  '<base href="/ok/"><a href="3">relative after base</a>\n</html', 'latin1');

function garbage(): Buffer {
  const rng = new Rng(0x9a2ba9e);
  const b = Buffer.alloc(64 * 1024);
  for (let i = 0; i < b.length; i++) b[i] = rng.u32() & 0xff;
  return b;
}

const MAX_YEAR = 9999;

function pad2(n: number): string {
  return n < 10 ? '0' + n : String(n);
}

function calendarPath(d: Date): string {
  return `/cal/${d.getUTCFullYear()}/${pad2(d.getUTCMonth() + 1)}/${pad2(d.getUTCDate())}`;
}

export class Traps {
  private bomb: Buffer | null = null;
  private garbageBody: Buffer | null = null;

  constructor(private readonly bombBytes: number) {}

  gzipBomb(): Buffer {
    if (this.bomb === null) this.bomb = buildGzipBomb(this.bombBytes);
    return this.bomb;
  }

  /** Answer of trap host `t` for `path` and `query`; 'slow' means: trickle forever. */
  respond(t: TrapHost, path: string, query = ''): StaticResponse | 'slow' {
    if (path === '/robots.txt') {
      return { status: 200, headers: { 'content-type': 'text/plain', 'content-length': ROBOTS_ALLOW.length }, body: ROBOTS_ALLOW };
    }
    switch (t) {
      case 'calendar': {
        if (path === '/') return html(200, list('Calendar', ['/cal/2024/01/01']));
        const m = /^\/cal\/(\d{4})\/(\d{2})\/(\d{2})$/.exec(path);
        if (!m) break;
        const y = +m[1], mo = +m[2], d = +m[3];
        const date = new Date(Date.UTC(y, mo - 1, d));
        if (y < 1 || y > MAX_YEAR || date.getUTCMonth() !== mo - 1 || date.getUTCDate() !== d) break;
        const next = new Date(date.getTime() + 86400000);
        const prev = new Date(date.getTime() - 86400000);
        const nextMonth = new Date(Date.UTC(y, mo, 1));
        return html(200, list(`Events on ${m[1]}-${m[2]}-${m[3]}`,
          [calendarPath(next), calendarPath(prev), calendarPath(nextMonth), '/']));
      }
      case 'pager': {
        if (path === '/') return html(200, list('Pager', ['/list?page=1', '/shop?sid=0']));
        const m = /^(page|sid)=(\d{1,15})$/.exec(query);
        if (path === '/list' && m && m[1] === 'page') {
          const n = +m[2];
          return html(200, list(`Page ${n}`, [`/list?page=${n + 1}`, `/list?page=${Math.max(1, n - 1)}`, '/']));
        }
        if (path === '/shop' && m && m[1] === 'sid') {
          // Every visit hands out a "new session": a fresh, never-seen URL per page.
          const next = (fmix32(+m[2] + 1) % 1e9) + 1;
          return html(200, list('Shop', [`/shop?sid=${next}`, '/']));
        }
        break;
      }
      case 'slow':
        if (path === '/') return html(200, list('Slow', ['/slow-forever']));
        if (path === '/slow-forever') return 'slow';
        break;
      case 'bomb':
        if (path === '/') return html(200, list('Bomb', ['/bomb.html']));
        if (path === '/bomb.html') {
          const body = this.gzipBomb();
          return { status: 200, headers: { 'content-type': HTML, 'content-encoding': 'gzip', 'content-length': body.length }, body };
        }
        break;
      case 'malformed':
        if (path === '/') return { status: 200, headers: { 'content-type': HTML, 'content-length': MALFORMED.length }, body: MALFORMED };
        if (/^\/ok\/[123]$/.test(path)) return html(200, `<!DOCTYPE html><html><head><title>ok</title></head><body><p>fine ${path}</p></body></html>\n`);
        break;
      case 'binary':
        if (path === '/') return html(200, list('Binary', ['/doc.pdf', '/image.png', '/garbage.html']));
        if (path === '/doc.pdf') return { status: 200, headers: { 'content-type': 'application/pdf', 'content-length': PDF.length }, body: PDF };
        if (path === '/image.png') return { status: 200, headers: { 'content-type': 'image/png', 'content-length': PNG.length }, body: PNG };
        if (path === '/garbage.html') {
          if (this.garbageBody === null) this.garbageBody = garbage();
          const body = this.garbageBody;
          return { status: 200, headers: { 'content-type': HTML, 'content-length': body.length }, body };
        }
        break;
      case 'loop': {
        if (path === '/') return html(200, list('Loops', ['/loop/a', '/self', '/chain/1']));
        if (path === '/loop/a') return redirect(302, '/loop/b');
        if (path === '/loop/b') return redirect(302, '/loop/a');
        if (path === '/self') return redirect(301, '/self');
        const m = /^\/chain\/(\d{1,9})$/.exec(path);
        if (m) return redirect(302, `/chain/${+m[1] + 1}`);
        break;
      }
    }
    return html(404, '<!DOCTYPE html><html><body><h1>404 Not Found</h1></body></html>\n');
  }
}
