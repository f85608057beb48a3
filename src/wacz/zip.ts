// A ZIP writer for WACZ: every entry STORED (method 0), as WACZ requires for the WARC
// and index files so that a reader can range-request a record inside the ZIP. Format:
// PKWARE APPNOTE.TXT 6.3 — local file header (§4.3.7), central directory (§4.3.12),
// end of central directory (§4.3.16), and ZIP64 (§4.3.14, §4.3.15, §4.5.3) for
// entries or offsets past 4 GiB, which a crawl's WARC files reach. Sizes and CRC-32
// are known before an entry is written (the caller has read the file once for its
// hashes), so no data descriptors are used.
import { open, type FileHandle } from 'node:fs/promises';
import { crc32 } from '../util/crc32.js';

const LOCAL_SIG = 0x04034b50;
const CENTRAL_SIG = 0x02014b50;
const EOCD_SIG = 0x06054b50;
const ZIP64_EOCD_SIG = 0x06064b50;
const ZIP64_LOCATOR_SIG = 0x07064b50;
const MAX32 = 0xffffffff;
const MAX16 = 0xffff;
const UTF8_NAMES = 0x0800; // general purpose bit 11 (APPNOTE §4.4.4): names are UTF-8
const COPY_CHUNK = 1 << 20;

interface Written {
  name: Buffer;
  crc: number;
  size: number;
  offset: number;
  zip64: boolean;
}

/** MS-DOS date and time (APPNOTE §4.4.6), local fields taken as UTC. */
function dosDateTime(d: Date): { time: number; date: number } {
  const year = Math.max(1980, d.getUTCFullYear());
  return {
    time: (d.getUTCHours() << 11) | (d.getUTCMinutes() << 5) | Math.floor(d.getUTCSeconds() / 2),
    date: ((year - 1980) << 9) | ((d.getUTCMonth() + 1) << 5) | d.getUTCDate(),
  };
}

export interface ZipOptions {
  /** Write ZIP64 fields for every entry and the end record, even when not needed (tests). */
  forceZip64?: boolean;
  /** Modification time of every entry (default now). */
  date?: Date;
}

export class ZipWriter {
  private offset = 0;
  private readonly entries: Written[] = [];
  private readonly dos: { time: number; date: number };

  private constructor(private readonly fh: FileHandle, private readonly o: ZipOptions) {
    this.dos = dosDateTime(o.date ?? new Date());
  }

  static async create(path: string, o: ZipOptions = {}): Promise<ZipWriter> {
    return new ZipWriter(await open(path, 'w'), o);
  }

  private async write(b: Uint8Array): Promise<void> {
    let done = 0;
    while (done < b.length) {
      const { bytesWritten } = await this.fh.write(b, done, b.length - done, this.offset + done);
      done += bytesWritten;
    }
    this.offset += b.length;
  }

  private async header(nameText: string, crc: number, size: number): Promise<Written> {
    const name = Buffer.from(nameText, 'utf8');
    const zip64 = this.o.forceZip64 === true || size >= MAX32 || this.offset >= MAX32;
    const extra = zip64 ? Buffer.alloc(20) : Buffer.alloc(0);
    if (zip64) {
      // §4.5.3: in the local header both sizes are present when either field is 0xFFFFFFFF.
      extra.writeUInt16LE(0x0001, 0);
      extra.writeUInt16LE(16, 2);
      extra.writeBigUInt64LE(BigInt(size), 4);
      extra.writeBigUInt64LE(BigInt(size), 12);
    }
    const h = Buffer.alloc(30);
    h.writeUInt32LE(LOCAL_SIG, 0);
    h.writeUInt16LE(zip64 ? 45 : 20, 4); // version needed: 4.5 for ZIP64, 2.0 otherwise
    h.writeUInt16LE(UTF8_NAMES, 6);
    h.writeUInt16LE(0, 8); // stored
    h.writeUInt16LE(this.dos.time, 10);
    h.writeUInt16LE(this.dos.date, 12);
    h.writeUInt32LE(crc >>> 0, 14);
    h.writeUInt32LE(zip64 ? MAX32 : size, 18);
    h.writeUInt32LE(zip64 ? MAX32 : size, 22);
    h.writeUInt16LE(name.length, 26);
    h.writeUInt16LE(extra.length, 28);
    const entry: Written = { name, crc: crc >>> 0, size, offset: this.offset, zip64 };
    await this.write(Buffer.concat([h, name, extra]));
    return entry;
  }

  /** A stored entry from memory. */
  async addBuffer(name: string, data: Uint8Array): Promise<void> {
    const entry = await this.header(name, crc32(data), data.length);
    await this.write(data);
    this.entries.push(entry);
  }

  /**
   * A stored entry copied from a file whose size and CRC-32 the caller computed; the
   * copy is checked against both (a file that changed in between is an error).
   */
  async addFile(name: string, path: string, size: number, crc: number): Promise<void> {
    const entry = await this.header(name, crc, size);
    const src = await open(path, 'r');
    try {
      const buf = Buffer.allocUnsafe(COPY_CHUNK);
      let pos = 0;
      let c = 0;
      while (pos < size) {
        const { bytesRead } = await src.read(buf, 0, Math.min(COPY_CHUNK, size - pos), pos);
        if (bytesRead === 0) break;
        const chunk = buf.subarray(0, bytesRead);
        c = crc32(chunk, c);
        await this.write(chunk);
        pos += bytesRead;
      }
      if (pos !== size || c !== (crc >>> 0)) throw new Error(`${path} changed while it was being packed`);
    } finally {
      await src.close();
    }
    this.entries.push(entry);
  }

  /** Writes the central directory and the end records, and closes the file. */
  async close(): Promise<void> {
    try {
      const cdStart = this.offset;
      for (const e of this.entries) {
        const needOffset = this.o.forceZip64 === true || e.offset >= MAX32;
        const needSize = e.zip64;
        const fields: bigint[] = [];
        // §4.5.3: in the central directory only the fields that overflow, in this order.
        if (needSize) fields.push(BigInt(e.size), BigInt(e.size));
        if (needOffset) fields.push(BigInt(e.offset));
        const extra = Buffer.alloc(fields.length ? 4 + 8 * fields.length : 0);
        if (fields.length) {
          extra.writeUInt16LE(0x0001, 0);
          extra.writeUInt16LE(8 * fields.length, 2);
          fields.forEach((v, i) => extra.writeBigUInt64LE(v, 4 + 8 * i));
        }
        const z = needSize || needOffset;
        const h = Buffer.alloc(46);
        h.writeUInt32LE(CENTRAL_SIG, 0);
        h.writeUInt16LE(z ? 45 : 20, 4); // version made by (MS-DOS attributes, spec 4.5 / 2.0)
        h.writeUInt16LE(z ? 45 : 20, 6); // version needed
        h.writeUInt16LE(UTF8_NAMES, 8);
        h.writeUInt16LE(0, 10);
        h.writeUInt16LE(this.dos.time, 12);
        h.writeUInt16LE(this.dos.date, 14);
        h.writeUInt32LE(e.crc, 16);
        h.writeUInt32LE(needSize ? MAX32 : e.size, 20);
        h.writeUInt32LE(needSize ? MAX32 : e.size, 24);
        h.writeUInt16LE(e.name.length, 28);
        h.writeUInt16LE(extra.length, 30);
        // comment length, disk number start, internal and external attributes: 0
        h.writeUInt32LE(needOffset ? MAX32 : e.offset, 42);
        await this.write(Buffer.concat([h, e.name, extra]));
      }
      const cdSize = this.offset - cdStart;
      const n = this.entries.length;
      const zip64End = this.o.forceZip64 === true || n >= MAX16 || cdStart >= MAX32 || cdSize >= MAX32;
      if (zip64End) {
        const z = Buffer.alloc(56);
        const at = this.offset;
        z.writeUInt32LE(ZIP64_EOCD_SIG, 0);
        z.writeBigUInt64LE(44n, 4); // size of the rest of this record
        z.writeUInt16LE(45, 12);
        z.writeUInt16LE(45, 14);
        // disk numbers (16, 20): 0
        z.writeBigUInt64LE(BigInt(n), 24);
        z.writeBigUInt64LE(BigInt(n), 32);
        z.writeBigUInt64LE(BigInt(cdSize), 40);
        z.writeBigUInt64LE(BigInt(cdStart), 48);
        const loc = Buffer.alloc(20);
        loc.writeUInt32LE(ZIP64_LOCATOR_SIG, 0);
        loc.writeBigUInt64LE(BigInt(at), 8);
        loc.writeUInt32LE(1, 16); // total number of disks
        await this.write(Buffer.concat([z, loc]));
      }
      const end = Buffer.alloc(22);
      end.writeUInt32LE(EOCD_SIG, 0);
      end.writeUInt16LE(zip64End ? MAX16 : n, 8);
      end.writeUInt16LE(zip64End ? MAX16 : n, 10);
      end.writeUInt32LE(zip64End ? MAX32 : cdSize, 12);
      end.writeUInt32LE(zip64End ? MAX32 : cdStart, 16);
      await this.write(end);
      await this.fh.sync();
    } finally {
      await this.fh.close();
    }
  }
}
