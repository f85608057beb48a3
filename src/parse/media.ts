// Media, opt-in (docs/media.md): which kinds the crawl also fetches
// (`--media images,pdf,video,audio`), their size caps (`--max-media-bytes`),
// and the small pure pieces the HTML parser (./html.ts) and the fetcher use —
// srcset candidates (HTML §4.8.4.3.5, simplified as below), the media kind of
// a Content-Type or of an element's `type` attribute or file extension.

import type { MediaConfig, MediaKind } from '../config.js';

// The types live with the other settings (src/config.ts); re-exported for the parser's callers.
export type { MediaConfig, MediaKind };
export const MEDIA_KINDS: readonly MediaKind[] = ['images', 'pdf', 'video', 'audio'];

/** Bits of a kinds mask (the parser's `media` option). */
export const M_IMAGES = 1;
export const M_PDF = 2;
export const M_VIDEO = 4;
export const M_AUDIO = 8;
const BIT: Record<MediaKind, number> = { images: M_IMAGES, pdf: M_PDF, video: M_VIDEO, audio: M_AUDIO };

/** What `--accept-type` gains for each kind asked for explicitly. */
export const MEDIA_TYPES: Record<MediaKind, string> = { images: 'image/*', pdf: 'application/pdf', video: 'video/*', audio: 'audio/*' };

export function mediaMask(kinds: readonly MediaKind[]): number {
  let m = 0;
  for (const k of kinds) m |= BIT[k];
  return m;
}

export function kindOfBit(bit: number): MediaKind | undefined {
  return bit === M_IMAGES ? 'images' : bit === M_PDF ? 'pdf' : bit === M_VIDEO ? 'video' : bit === M_AUDIO ? 'audio' : undefined;
}

/** The kind of a media type (`image/png`, `application/pdf; x=y`), or undefined. */
export function mediaKindOfType(contentType: string | undefined | null): MediaKind | undefined {
  if (!contentType) return undefined;
  const t = contentType.split(';')[0]!.trim().toLowerCase();
  if (t.startsWith('image/')) return 'images';
  if (t === 'application/pdf' || t === 'application/x-pdf') return 'pdf';
  if (t.startsWith('video/')) return 'video';
  if (t.startsWith('audio/')) return 'audio';
  return undefined;
}

const EXT_KIND: Record<string, number> = {
  pdf: M_PDF,
  jpg: M_IMAGES, jpeg: M_IMAGES, png: M_IMAGES, gif: M_IMAGES, webp: M_IMAGES, avif: M_IMAGES, svg: M_IMAGES, bmp: M_IMAGES, ico: M_IMAGES, tif: M_IMAGES, tiff: M_IMAGES,
  mp4: M_VIDEO, webm: M_VIDEO, ogv: M_VIDEO, mov: M_VIDEO, m4v: M_VIDEO, mkv: M_VIDEO,
  mp3: M_AUDIO, ogg: M_AUDIO, oga: M_AUDIO, wav: M_AUDIO, m4a: M_AUDIO, flac: M_AUDIO, opus: M_AUDIO,
};

/** The kind bit of a URL or reference by its path's extension (`/a/b.PDF?x` → pdf), 0 when unknown. */
export function mediaBitOfPath(ref: string): number {
  let end = ref.length;
  const q = ref.indexOf('?');
  if (q >= 0) end = q;
  const h = ref.indexOf('#');
  if (h >= 0 && h < end) end = h;
  const dot = ref.lastIndexOf('.', end - 1);
  if (dot < 0 || end - dot > 5) return 0;
  const slash = ref.indexOf('/', dot);
  if (slash >= 0 && slash < end) return 0; // a dot in a directory name
  return EXT_KIND[ref.slice(dot + 1, end).toLowerCase()] ?? 0;
}

/** The kind bit of an element's `type` attribute, else of its reference's extension (embed, object, a bare source). */
export function mediaBitOf(type: string | null, ref: string): number {
  const k = type ? mediaKindOfType(type) : undefined;
  return k ? BIT[k] : mediaBitOfPath(ref);
}

/**
 * The URLs of a srcset attribute (HTML §4.8.4.3.5 "parse a srcset attribute",
 * simplified: candidates are separated by commas; a URL runs to the first
 * whitespace, trailing commas ending the candidate; descriptors are skipped up
 * to the next comma outside parentheses).
 */
export function srcsetUrls(v: string): string[] {
  const out: string[] = [];
  let i = 0;
  const n = v.length;
  const ws = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d;
  while (i < n) {
    while (i < n && (ws(v.charCodeAt(i)) || v.charCodeAt(i) === 0x2c)) i++;
    if (i >= n) break;
    const start = i;
    while (i < n && !ws(v.charCodeAt(i))) i++;
    let url = v.slice(start, i);
    let ended = false;
    if (url.endsWith(',')) { url = url.replace(/,+$/, ''); ended = true; }
    if (url) out.push(url);
    if (ended) continue;
    let depth = 0;
    while (i < n) {
      const c = v.charCodeAt(i);
      if (c === 0x28) depth++;
      else if (c === 0x29 && depth > 0) depth--;
      else if (c === 0x2c && depth === 0) { i++; break; }
      i++;
    }
  }
  return out;
}

// ---- the command line's syntax (src/cli/options.ts) ----------------------------------------

/** `images,pdf`: the kinds, each once (`none`: no kind); throws a one-line usage error. */
export function parseMediaKinds(spec: string): MediaKind[] {
  const out: MediaKind[] = [];
  if (spec.trim().toLowerCase() === 'none') return out;
  for (const raw of spec.split(',')) {
    const k = raw.trim().toLowerCase();
    if (k === '') continue;
    const kind = (k === 'image' ? 'images' : k) as MediaKind;
    if (!MEDIA_KINDS.includes(kind)) throw new Error(`--media takes a comma-separated list of ${MEDIA_KINDS.join(', ')}; got '${raw.trim()}'`);
    if (!out.includes(kind)) out.push(kind);
  }
  return out;
}

const UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, kb: 1024, kib: 1024, m: 1024 ** 2, mb: 1024 ** 2, mib: 1024 ** 2, g: 1024 ** 3, gb: 1024 ** 3, gib: 1024 ** 3 };

/** `5MB`, `500k`, `1GiB`, `2048` (bytes); KB/MB/GB are powers of 1024. */
export function parseByteSize(v: string, what: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(v.trim());
  const unit = m ? UNITS[m[2]!.toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new Error(`${what}: '${v}' is not a size such as 5MB, 500KB or 2048`);
  const n = Math.round(Number(m[1]) * unit);
  if (n < 1024) throw new Error(`${what}: a size of at least 1KB, got '${v}'`);
  return n;
}

/**
 * `--max-media-bytes`: one size for every kind (`20MB`), or kind=size pairs
 * (`images=5MB,pdf=50MB`) over `base` (the kinds not named keep theirs).
 */
export function parseMediaBytes(spec: string, base: Record<MediaKind, number>): Record<MediaKind, number> {
  const out = { ...base };
  const s = spec.trim();
  if (!s.includes('=')) {
    const n = parseByteSize(s, '--max-media-bytes');
    for (const k of MEDIA_KINDS) out[k] = n;
    return out;
  }
  for (const part of s.split(',')) {
    if (part.trim() === '') continue;
    const eqAt = part.indexOf('=');
    const kinds = eqAt < 0 ? [] : parseMediaKinds(part.slice(0, eqAt));
    if (kinds.length !== 1) throw new Error(`--max-media-bytes takes SIZE or KIND=SIZE,… (kinds: ${MEDIA_KINDS.join(', ')}); got '${part.trim()}'`);
    out[kinds[0]!] = parseByteSize(part.slice(eqAt + 1), `--max-media-bytes ${kinds[0]}`);
  }
  return out;
}

/** `images=5MB,pdf=50MB,…` (the form --max-media-bytes reads). */
export function formatMediaBytes(v: Record<MediaKind, number>): string {
  const size = (n: number) => {
    for (const [u, f] of [['GB', 1024 ** 3], ['MB', 1024 ** 2], ['KB', 1024]] as const) if (n % f === 0) return `${n / f}${u}`;
    return String(n);
  };
  return MEDIA_KINDS.map((k) => `${k}=${size(v[k])}`).join(',');
}

/**
 * The fetcher's body cap for a response (src/fetch/fetcher.ts `bodyCap`): the
 * cap of its media kind when that kind is asked for, else undefined (the page cap).
 */
export function mediaBodyCap(cfg: MediaConfig): ((contentType: string | undefined) => number | undefined) | undefined {
  if (cfg.kinds.length === 0) return undefined;
  const on = new Set(cfg.kinds);
  return (ct) => {
    const k = mediaKindOfType(ct);
    return k && on.has(k) ? cfg.maxBytes[k] : undefined;
  };
}

/** `--accept-type` plus the media types of the kinds asked for (a kind asked for is accepted); unchanged when it accepts all. */
export function acceptWithMedia(accept: readonly string[], cfg: MediaConfig): string[] {
  if (accept.length === 0) return [...accept];
  const out = [...accept];
  for (const k of cfg.kinds) if (!out.includes(MEDIA_TYPES[k])) out.push(MEDIA_TYPES[k]);
  return out;
}
