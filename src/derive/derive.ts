// WAT and WET files derived from WARC files, in Common Crawl's formats (docs/warc.md
// "WAT and WET"), as ia-web-commons / webarchive-commons write them:
// - WAT (`X.warc.wat.gz`): a warcinfo record, then for every record of the WARC a
//   `metadata` record, Content-Type application/json, WARC-Refers-To the record's id,
//   whose block is the JSON "Container"/"Envelope" description of it (WARC header
//   fields, HTTP message, and for HTML its title, <link>s, <meta>s and links).
// - WET (`X.warc.wet.gz`): a warcinfo record, then for every HTML response a
//   `conversion` record, Content-Type text/plain, WARC-Refers-To the response, whose
//   block is the page's visible text.
// Input records are read one at a time (readWarc: gzip member by gzip member with
// warcio's WARCParser); output records are written as they are made, each its own
// gzip member, so memory stays at about one record.
import { createWriteStream } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { once } from 'node:events';
import { hostname } from 'node:os';
import { WARCRecord, WARCSerializer, WARC_1_1 } from 'warcio';
import { readWarc, type WarcEntry } from '../warc/reader.js';
import { gzipMember, newRecordId, warcDate, warcFields } from '../warc/records.js';
import { labelledDigest, type DigestAlgo } from '../warc/digest.js';
import { decodeBody } from '../fetch/decode.js';
import { extractPage, type PageExtract } from '../parse/html.js';
import { DEFAULT_ROBOTS_TOKEN } from '../config.js';

export type DerivedKind = 'wat' | 'wet';

const SOFTWARE = 'ubicrawl/0.1';
/** Bodies beyond this are parsed only up to it (the crawl's own cap is 2 MiB). */
const MAX_DECODED = 16 << 20;

function header(e: WarcEntry, name: string): string | undefined {
  const want = name.toLowerCase();
  for (const k of Object.keys(e.headers)) if (k.toLowerCase() === want) return e.headers[k];
  return undefined;
}

function httpHeader(e: WarcEntry, name: string): string | undefined {
  const want = name.toLowerCase();
  const h = e.httpHeaders?.find(([k]) => k.toLowerCase() === want);
  return h?.[1];
}

/** The entity of an HTTP response with its Content-Encoding undone (stored as received: docs/warc.md). */
export function decodedEntity(e: WarcEntry): Buffer {
  const raw = Buffer.from(e.payload ?? new Uint8Array(0));
  const d = decodeBody(raw, httpHeader(e, 'content-encoding'), MAX_DECODED);
  return d.body;
}

function isHtmlResponse(e: WarcEntry): boolean {
  if (e.type !== 'response' || !e.httpStatusLine) return false;
  const ct = (httpHeader(e, 'content-type') ?? '').toLowerCase();
  return ct.includes('html');
}

function parseHtml(e: WarcEntry, wantText: boolean): PageExtract | null {
  const url = header(e, 'WARC-Target-URI');
  if (!url || !isHtmlResponse(e)) return null;
  return extractPage(decodedEntity(e), {
    url, contentType: httpHeader(e, 'content-type'), robotsToken: DEFAULT_ROBOTS_TOKEN,
    includeResources: true, followNofollowLinks: true, wantText, maxLinks: 100_000,
  });
}

/** webarchive-commons' link path: ELEMENT@/attribute (ExtractingParseObserver.makePath). */
const LINK_PATH: Record<string, string> = { a: 'A@/href', area: 'AREA@/href', frame: 'FRAME@/src', iframe: 'IFRAME@/src' };

/** "HTML-Metadata": Head (Title, Base, Link, Metas) and Links, the keys of webarchive-commons' HTMLMetaData. */
export function htmlMetadata(page: PageExtract): Record<string, unknown> {
  const head: Record<string, unknown> = {};
  if (page.title !== undefined) head.Title = page.title;
  const links: Array<Record<string, string>> = [];
  const linkTags: Array<Record<string, string>> = [];
  for (const l of page.links) {
    if (l.tag === 'link' || l.tag === 'canonical') linkTags.push({ path: 'LINK@/href', url: l.url, ...(l.rel !== undefined ? { rel: l.rel } : {}) });
    else if (l.tag === 'refresh') continue;
    else links.push({ path: LINK_PATH[l.tag]!, url: l.url, ...(l.rel !== undefined ? { rel: l.rel } : {}) });
  }
  if (linkTags.length) head.Link = linkTags;
  if (page.metaRefresh !== undefined) head.Metas = [{ 'http-equiv': 'refresh', content: `${page.metaRefreshDelay ?? 0}; url=${page.metaRefresh}` }];
  const out: Record<string, unknown> = { Head: head };
  if (links.length) out.Links = links;
  return out;
}

function headerObject(list: [string, string][] | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of list ?? []) out[k] = k in out ? `${out[k]}, ${v}` : v;
  return out;
}

/** The WAT JSON of one WARC record: Container (where it is) and Envelope (what it is). */
export function watJson(e: WarcEntry, filename: string, algo: DigestAlgo = 'sha1'): Record<string, unknown> {
  const block = e.block ?? new Uint8Array(0);
  const payloadMeta: Record<string, unknown> = { 'Actual-Content-Type': header(e, 'Content-Type') ?? '' };
  if (e.httpStatusLine && (e.type === 'response' || e.type === 'revisit' || e.type === 'request')) {
    const parts = e.httpStatusLine.split(' ');
    const entity = e.payload ?? new Uint8Array(0);
    const meta: Record<string, unknown> = {};
    if (e.type === 'request') meta['Request-Message'] = { Method: parts[0] ?? '', Path: parts[1] ?? '', Version: parts[2] ?? '' };
    else meta['Response-Message'] = { Version: parts[0] ?? '', Status: parts[1] ?? '', Reason: parts.slice(2).join(' ') };
    meta['Headers-Length'] = String(block.length - entity.length);
    meta.Headers = headerObject(e.httpHeaders);
    meta['Entity-Length'] = String(entity.length);
    meta['Entity-Digest'] = labelledDigest(algo, entity);
    meta['Entity-Trailing-Slop-Length'] = '0';
    const page = e.type === 'response' ? parseHtml(e, false) : null;
    if (page?.isHtml) meta['HTML-Metadata'] = htmlMetadata(page);
    payloadMeta[e.type === 'request' ? 'HTTP-Request-Metadata' : 'HTTP-Response-Metadata'] = meta;
  } else if (e.type === 'warcinfo' || /warc-fields/i.test(header(e, 'Content-Type') ?? '')) {
    const fields: Record<string, string> = {};
    for (const line of Buffer.from(block).toString('utf8').split(/\r?\n/)) {
      const c = line.indexOf(':');
      if (c > 0) fields[line.slice(0, c).trim()] = line.slice(c + 1).trim();
    }
    payloadMeta[e.type === 'warcinfo' ? 'WARC-Info-Metadata' : 'WARC-Metadata-Metadata'] = fields;
  }
  return {
    Container: { Filename: filename, Compressed: /\.gz$/i.test(filename), Offset: String(e.offset) },
    Envelope: {
      Format: 'WARC',
      'WARC-Header-Metadata': { ...e.headers },
      'Block-Digest': header(e, 'WARC-Block-Digest') ?? labelledDigest(algo, block),
      'Actual-Content-Length': String(block.length),
      'Payload-Metadata': payloadMeta,
    },
  };
}

/** The WET text of an HTML response: its visible text (title first, as a line of its own), or null. */
export function wetText(e: WarcEntry): string | null {
  const page = parseHtml(e, true);
  if (!page?.isHtml) return null;
  const text = page.text ?? '';
  return page.title ? `${page.title}\n${text}` : text;
}

async function encode(type: string, url: string | undefined, date: string, fields: [string, string][], body: Uint8Array, algo: DigestAlgo): Promise<Uint8Array> {
  // No HTTP message in these blocks: the payload is the whole block, so both digests are equal (set here, not left to warcio).
  const digest = labelledDigest(algo, body);
  const warcHeaders: [string, string][] = [['WARC-Type', type], ['WARC-Record-ID', newRecordId()], ['WARC-Date', date], ...fields,
    ...(type === 'warcinfo' ? [] : [['WARC-Payload-Digest', digest] as [string, string]]), ['WARC-Block-Digest', digest]];
  const rec = WARCRecord.create({ url, date, type: type as 'metadata', warcVersion: WARC_1_1, warcHeaders }, [body]);
  if (url === undefined) rec.warcHeaders.headers.delete('WARC-Target-URI');
  const raw = await WARCSerializer.serialize(rec, { gzip: false });
  return gzipMember(raw, 4);
}

/** CC's name for a derived file: X.warc.gz → X.warc.wat.gz / X.warc.wet.gz. */
export function derivedName(warcPath: string, kind: DerivedKind): string {
  const b = basename(warcPath).replace(/\.warc(\.gz)?$/i, '');
  return `${b}.warc.${kind}.gz`;
}

export interface DeriveResult { input: string; output: string; records: number }

/** Writes the WAT or WET file of one WARC file (into `outDir`, default next to it). */
export async function deriveFile(warcPath: string, kind: DerivedKind, opts: { outDir?: string; digest?: DigestAlgo } = {}): Promise<DeriveResult> {
  const algo = opts.digest ?? 'sha1';
  const filename = basename(warcPath);
  const outName = derivedName(warcPath, kind);
  const output = join(opts.outDir ?? dirname(warcPath), outName);
  const ws = createWriteStream(output);
  const write = async (b: Uint8Array) => { if (!ws.write(b)) await once(ws, 'drain'); };
  let records = 0;
  try {
    // The warcinfo fields of Common Crawl's ia-web-commons (WATExtractorOutput / WETExtractorOutput).
    const started = new Date();
    const info: [string, string][] = [['Software-Info', SOFTWARE], ['Extracted-Date', started.toUTCString()], ['hostname', hostname()],
      ['format', 'WARC File Format 1.1'], ['conformsTo', 'https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/'],
      ['description', `${kind === 'wat' ? 'WAT metadata' : 'WET extracted text'} of ${filename}`]];
    await write(await encode('warcinfo', undefined, warcDate(new Date()), [['WARC-Filename', outName], ['Content-Type', 'application/warc-fields']], warcFields(info), algo));
    for await (const e of readWarc(warcPath, { block: true })) {
      const id = header(e, 'WARC-Record-ID');
      // WAT: the extraction time, as ia-web-commons writes it (WARC/1.1 §5.4: when this record was made);
      // WET: the capture's date, as ia-web-commons' conversion records carry it.
      const date = kind === 'wat' ? warcDate(started) : header(e, 'WARC-Date') ?? warcDate(started);
      const url = header(e, 'WARC-Target-URI') ?? (e.type === 'warcinfo' ? header(e, 'WARC-Filename') : undefined);
      if (kind === 'wat') {
        const json = Buffer.from(JSON.stringify(watJson(e, filename, algo)), 'utf8');
        const refers: [string, string][] = id ? [['WARC-Refers-To', id]] : [];
        await write(await encode('metadata', url, date, [...refers, ['Content-Type', 'application/json']], json, algo));
        records++;
      } else {
        const text = wetText(e);
        if (text === null || !url) continue;
        const fields: [string, string][] = id ? [['WARC-Refers-To', id]] : [];
        await write(await encode('conversion', url, date, [...fields, ['Content-Type', 'text/plain']], Buffer.from(text, 'utf8'), algo));
        records++;
      }
    }
  } finally {
    ws.end();
    await once(ws, 'finish').catch(() => {});
  }
  return { input: warcPath, output, records };
}

/** `ubicrawl wat` / `ubicrawl wet`: 0 done, 1 some file could not be read or written. */
export async function runDeriveCommand(kind: DerivedKind, paths: string[], opts: { outDir?: string }): Promise<number> {
  let failed = 0;
  for (const p of paths) {
    try {
      const r = await deriveFile(p, kind, opts.outDir ? { outDir: opts.outDir } : {});
      process.stdout.write(`${r.output}\n`);
      process.stderr.write(`${p}: ${r.records} ${kind === 'wat' ? 'metadata' : 'conversion'} records\n`);
    } catch (err) {
      failed++;
      process.stderr.write(`ubicrawl: ${p}: ${(err as Error).message}\n`);
    }
  }
  return failed ? 1 : 0;
}
