// Walks the gzip members of a file (RFC 1952 §2.2: a gzip file is a series of
// members) with native zlib, giving each member's exact offset and length and its
// inflated bytes. It stops cleanly at the first member that is incomplete or
// corrupt, which is what crash recovery and the reader need: every member before
// that point is whole (its CRC-32 and ISIZE trailer checked, RFC 1952 §2.3.1).
import { open } from 'node:fs/promises';
import { inflateRawSync, crc32 } from 'node:zlib';

export interface GzMember {
  offset: number;
  length: number;
  data: Buffer;
}

export interface GzTail {
  /** File offset just past the last whole member. */
  end: number;
  size: number;
  /** Why the walk stopped before the end of the file, if it did. */
  problem: null | 'truncated' | 'corrupt';
}

const WINDOW = 4 << 20;
const FEXTRA = 4;
const FNAME = 8;
const FCOMMENT = 16;
const FHCRC = 2;

/** Length of the member header starting at buf[p], or -1 if buf ends first, -2 if not gzip. */
function headerLength(buf: Buffer, p: number): number {
  if (buf.length - p < 10) return -1;
  if (buf[p] !== 0x1f || buf[p + 1] !== 0x8b || buf[p + 2] !== 8) return -2;
  const flg = buf[p + 3];
  let q = p + 10;
  if (flg & FEXTRA) {
    if (buf.length - q < 2) return -1;
    q += 2 + buf.readUInt16LE(q);
  }
  for (const f of [FNAME, FCOMMENT]) {
    if (flg & f) {
      const z = buf.indexOf(0, q);
      if (z < 0) return -1;
      q = z + 1;
    }
  }
  if (flg & FHCRC) q += 2;
  return q > buf.length ? -1 : q - p;
}

/**
 * Yields whole members in file order; `onTail` (if given) learns where and why the walk
 * ended. Never throws on bad data, only on I/O errors.
 */
export async function* gzipMembers(path: string, onTail?: (t: GzTail) => void): AsyncGenerator<GzMember> {
  const fh = await open(path, 'r');
  try {
    const size = (await fh.stat()).size;
    let buf: Buffer = Buffer.alloc(0);
    let bufStart = 0; // file offset of buf[0]
    let pos = 0; // file offset of the next member
    let problem: GzTail['problem'] = null;
    // Reads more of the file into the window (dropping what lies before `pos`); false at EOF.
    const more = async (): Promise<boolean> => {
      const have = bufStart + buf.length;
      if (have >= size) return false;
      const keep = buf.subarray(pos - bufStart);
      const want = Math.min(Math.max(WINDOW, keep.length), size - have);
      const next = Buffer.allocUnsafe(keep.length + want);
      keep.copy(next, 0);
      let got = 0;
      while (got < want) {
        const { bytesRead } = await fh.read(next, keep.length + got, want - got, have + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      buf = next.subarray(0, keep.length + got);
      bufStart = pos;
      return got > 0;
    };
    while (pos < size) {
      const p = pos - bufStart;
      const h = headerLength(buf, p);
      if (h === -1) {
        if (await more()) continue;
        problem = 'truncated';
        break;
      }
      if (h === -2) {
        problem = 'corrupt';
        break;
      }
      let out: { buffer: Buffer; engine: { bytesWritten: number } };
      try {
        out = inflateRawSync(buf.subarray(p + h), { info: true }) as unknown as typeof out;
      } catch (e) {
        const code = (e as { code?: string }).code;
        if (code === 'Z_BUF_ERROR' || /unexpected end/i.test(String((e as Error).message))) {
          if (await more()) continue;
          problem = 'truncated';
        } else {
          problem = 'corrupt';
        }
        break;
      }
      const trailer = p + h + out.engine.bytesWritten;
      if (buf.length - trailer < 8) {
        if (await more()) continue;
        problem = 'truncated';
        break;
      }
      const crc = buf.readUInt32LE(trailer);
      const isize = buf.readUInt32LE(trailer + 4);
      if (crc !== crc32(out.buffer) || isize !== out.buffer.length >>> 0) {
        problem = 'corrupt';
        break;
      }
      const length = h + out.engine.bytesWritten + 8;
      yield { offset: pos, length, data: out.buffer };
      pos += length;
    }
    onTail?.({ end: pos, size, problem });
  } finally {
    await fh.close();
  }
}
