// A tiny authoritative-looking DNS responder on loopback UDP for tests
// (RFC 1035 §4.1 message format). It answers A/AAAA for configured names with
// the configured TTL, NXDOMAIN (RCODE 3) for unknown names, NOERROR with no
// answers (NODATA) for a configured name without records of the asked type,
// and can delay, SERVFAIL (RCODE 2) or drop the answer for a name. Every query
// it receives is counted, so tests can assert on what the resolver really sent.
import { createSocket, type Socket } from 'node:dgram';
import { isIPv4, isIPv6 } from 'node:net';
import { after } from 'node:test';

export interface DnsName {
  a?: string[];
  aaaa?: string[];
  /** Seconds; 60 unless given. */
  ttl?: number;
  /** Answer this long after the query arrives. */
  delayMs?: number;
  /** Answer with SERVFAIL. */
  servfail?: boolean;
  /** Never answer (the resolver times out). */
  drop?: boolean;
}

export interface QueryLog { name: string; type: 'A' | 'AAAA' | number; at: number }

export interface TestDnsServer {
  /** `127.0.0.1:PORT`, ready for `servers: [...]`. */
  readonly server: string;
  readonly port: number;
  readonly names: Map<string, DnsName>;
  readonly log: QueryLog[];
  /** Queries received for `name` (any type unless given). */
  count(name: string, type?: 'A' | 'AAAA'): number;
  close(): Promise<void>;
}

const TYPE_A = 1;
const TYPE_AAAA = 28;

export async function startDnsServer(names: Record<string, DnsName> = {}): Promise<TestDnsServer> {
  const map = new Map<string, DnsName>();
  for (const [k, v] of Object.entries(names)) map.set(k.toLowerCase(), v);
  const log: QueryLog[] = [];
  const sock: Socket = createSocket('udp4');
  const timers = new Set<NodeJS.Timeout>();
  sock.on('message', (msg, rinfo) => {
    const q = parseQuery(msg);
    if (!q) return;
    const entry = map.get(q.name.toLowerCase());
    log.push({ name: q.name.toLowerCase(), type: q.type === TYPE_A ? 'A' : q.type === TYPE_AAAA ? 'AAAA' : q.type, at: Date.now() });
    if (entry?.drop) return;
    const reply = buildReply(msg, q, entry);
    const send = () => sock.send(reply, rinfo.port, rinfo.address);
    if (entry?.delayMs) {
      const t = setTimeout(() => { timers.delete(t); send(); }, entry.delayMs);
      timers.add(t);
    } else send();
  });
  await new Promise<void>((resolve) => sock.bind(0, '127.0.0.1', resolve));
  const port = sock.address().port;
  let closed = false;
  const srv: TestDnsServer = {
    server: `127.0.0.1:${port}`,
    port,
    names: map,
    log,
    count(name, type) {
      const n = name.toLowerCase();
      return log.filter((l) => l.name === n && (type === undefined || l.type === type)).length;
    },
    close() {
      if (closed) return Promise.resolve();
      closed = true;
      for (const t of timers) clearTimeout(t);
      return new Promise((resolve) => sock.close(() => resolve()));
    },
  };
  after(() => srv.close());
  return srv;
}

interface Query { id: number; name: string; type: number; qclass: number; questionEnd: number }

/** Parses the header and first question (RFC 1035 §4.1.1, §4.1.2); null when malformed. */
function parseQuery(msg: Buffer): Query | null {
  if (msg.length < 12) return null;
  const qd = msg.readUInt16BE(4);
  if (qd < 1) return null;
  let off = 12;
  const labels: string[] = [];
  for (;;) {
    if (off >= msg.length) return null;
    const len = msg[off]!;
    off++;
    if (len === 0) break;
    if (len > 63 || off + len > msg.length) return null; // no compression in a question we parse
    labels.push(msg.toString('latin1', off, off + len));
    off += len;
  }
  if (off + 4 > msg.length) return null;
  return { id: msg.readUInt16BE(0), name: labels.join('.'), type: msg.readUInt16BE(off), qclass: msg.readUInt16BE(off + 2), questionEnd: off + 4 };
}

function buildReply(msg: Buffer, q: Query, entry: DnsName | undefined): Buffer {
  const question = msg.subarray(12, q.questionEnd); // echoed byte for byte (keeps any 0x20 case mixing)
  let rcode = 0;
  const rdatas: Buffer[] = [];
  if (!entry) rcode = 3; // NXDOMAIN
  else if (entry.servfail) rcode = 2;
  else if (q.type === TYPE_A) {
    for (const a of entry.a ?? []) if (isIPv4(a)) rdatas.push(Buffer.from(a.split('.').map(Number)));
  } else if (q.type === TYPE_AAAA) {
    for (const a of entry.aaaa ?? []) if (isIPv6(a)) rdatas.push(ipv6Bytes(a));
  }
  const ttl = entry?.ttl ?? 60;
  const header = Buffer.alloc(12);
  header.writeUInt16BE(q.id, 0);
  const rd = msg[2]! & 0x01;
  header[2] = 0x80 | 0x04 | rd; // QR, AA, RD copied
  header[3] = 0x80 | rcode; // RA
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(rdatas.length, 6);
  const answers = rdatas.map((rdata) => {
    const rr = Buffer.alloc(12 + rdata.length);
    rr.writeUInt16BE(0xc00c, 0); // pointer to the question name
    rr.writeUInt16BE(q.type, 2);
    rr.writeUInt16BE(1, 4); // IN
    rr.writeUInt32BE(ttl, 6);
    rr.writeUInt16BE(rdata.length, 10);
    rdata.copy(rr, 12);
    return rr;
  });
  return Buffer.concat([header, question, ...answers]);
}

function ipv6Bytes(a: string): Buffer {
  const [head, tail] = a.includes('::') ? a.split('::') as [string, string] : [a, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g || '0', 16), i * 2));
  return out;
}
