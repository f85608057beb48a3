// The WAN emulator (bench/wan/README.md): the pure link model and topology,
// then the relay on loopback with real timers (latency, bandwidth cap,
// partition and heal), then two agents that reach each other only through it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { scheduleChunk, parseRate, parseDuration, DEFAULT_LINK, SEGMENT_BYTES, type LinkProfile } from '../bench/wan/link.js';
import { Topology, checkWanConfig } from '../bench/wan/topology.js';
import { parseWanCommand } from '../bench/wan/commands.js';
import { WanRelay, type WanStatus } from '../bench/wan/relay.js';
import { startSyntheticWeb } from '../bench/web/index.js';
import { tempDir, waitUntil, freePort } from './helpers.js';
import { startAgentProcess, pageCounts, listeningOn } from './mesh-agents.js';

const profile = (p: Partial<LinkProfile>): LinkProfile => ({ ...DEFAULT_LINK, ...p });

// ---------------------------------------------------------------- pure parts

test('link model: latency, serialisation at the cap, jitter never reorders a stream, a loss is a stall', () => {
  const flat = scheduleChunk(profile({ latencyMs: 60 }), { freeAt: 0 }, { lastDeliverAt: 0 }, 1000, 500, Math.random);
  assert.equal(flat.deliverAt, 1060);
  // 1 MB/s: 100 kB take 100 ms on the wire; a second chunk queues behind the first on the same link.
  const q = { freeAt: 0 };
  const p = profile({ latencyMs: 10, bytesPerSec: 1_000_000 });
  assert.equal(scheduleChunk(p, q, { lastDeliverAt: 0 }, 0, 100_000, Math.random).deliverAt, 110);
  assert.equal(scheduleChunk(p, q, { lastDeliverAt: 0 }, 0, 100_000, Math.random).deliverAt, 210, 'another connection on the link shares the cap');
  // Jitter: deliveries within latency ± jitter, and in order.
  const order = { lastDeliverAt: 0 };
  let last = 0;
  let rnd = 0.123;
  const rand = () => (rnd = (rnd * 9301 + 0.49297) % 1);
  for (let t = 0; t < 100; t++) {
    const s = scheduleChunk(profile({ latencyMs: 50, jitterMs: 20 }), { freeAt: 0 }, order, t, 100, rand);
    assert.ok(s.deliverAt >= last, 'no reordering');
    assert.ok(s.deliverAt >= t + 30 && s.deliverAt <= Math.max(last, t + 70), `within latency ± jitter (${s.deliverAt} at ${t})`);
    last = s.deliverAt;
  }
  const lossy = scheduleChunk(profile({ latencyMs: 5, lossRate: 1, stallMs: 200 }), { freeAt: 0 }, { lastDeliverAt: 0 }, 0, 2 * SEGMENT_BYTES, Math.random);
  assert.deepEqual(lossy, { deliverAt: 405, losses: 2 });
});

test('units, rules and commands', () => {
  assert.equal(parseRate('10mbit'), 1_250_000);
  assert.equal(parseRate('2MB'), 2_000_000);
  assert.equal(parseRate('1MiB/s'), 1 << 20);
  assert.equal(parseRate(0), 0);
  assert.throws(() => parseRate('fast'), /not a bandwidth/);
  assert.equal(parseDuration('1.5s'), 1500);
  assert.equal(parseDuration('60'), 60);
  const topo = new Topology(checkWanConfig({
    agents: [
      { name: 'e1', zone: 'eu', source: '127.0.1.1', target: '127.0.0.1:1' },
      { name: 'e2', zone: 'eu', source: '127.0.1.2', target: '127.0.0.1:2' },
      { name: 'u1', zone: 'us', source: '127.0.2.1', target: '127.0.0.1:3' },
    ],
    links: [{ from: '*', to: '*', latency: 1 }, { from: '*', to: '*', crossZone: true, latency: '60ms' }, { from: 'e2', to: 'us', rate: '1mbit' }],
  }));
  assert.equal(topo.profile('e1', 'e2').latencyMs, 1);
  assert.equal(topo.profile('e1', 'u1').latencyMs, 60);
  assert.equal(topo.profile('e2', 'u1').bytesPerSec, 125_000);
  assert.equal(topo.profile('u1', 'e2').bytesPerSec, 0, 'per direction');
  assert.equal(topo.agentAt('::ffff:127.0.2.1')?.name, 'u1');
  assert.deepEqual(topo.select('eu').sort(), ['e1', 'e2']);
  assert.throws(() => topo.select('ap'), /no agent or zone named ap/);
  topo.partition(topo.select('eu'), topo.select('us'), { mode: 'hold', reset: false });
  assert.ok(topo.cut('u1', 'e1') && topo.cut('e2', 'u1') && !topo.cut('e1', 'e2'));
  assert.equal(topo.heal(), 4);
  assert.throws(() => checkWanConfig({ agents: [{ name: 'a', zone: 'z', source: '127.0.0.2', target: 'x' }] }), /host:port/);
  assert.deepEqual(parseWanCommand('partition eu us drop reset'), { kind: 'partition', a: 'eu', b: 'us', mode: 'drop', reset: true });
  assert.deepEqual(parseWanCommand('heal'), { kind: 'heal' });
  assert.deepEqual(parseWanCommand('set eu us latency=60ms jitter=5 cross'), { kind: 'set', from: 'eu', to: 'us', patch: { latencyMs: 60, jitterMs: 5 }, crossZone: true });
  assert.throws(() => parseWanCommand('set eu us speed=1'), /unknown key speed/);
  assert.throws(() => parseWanCommand('explode'), /unknown command/);
});

// ---------------------------------------------------------------- the relay on loopback

/** An echo server standing for agent "b"; the caller "a" dials from 127.0.0.2. */
async function echoSetup(links: Array<Record<string, unknown>>): Promise<{ relay: WanRelay; echo: Server; dial: () => Promise<Socket>; close: () => Promise<void> }> {
  const echo = createServer((s) => { s.on('error', () => {}); s.pipe(s); });
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  const relay = await WanRelay.start({
    agents: [
      { name: 'a', zone: 'eu', source: '127.0.0.2', target: '127.0.0.1:9' },
      { name: 'b', zone: 'us', source: '127.0.0.3', target: `127.0.0.1:${(echo.address() as { port: number }).port}` },
    ],
    links: links as never, control: 0,
  });
  const dial = async () => {
    const b = relay.addressOf('b');
    const s = connect({ host: b.host, port: b.port, localAddress: '127.0.0.2' });
    s.setNoDelay(true);
    await new Promise<void>((resolve, reject) => { s.once('connect', resolve); s.once('error', reject); });
    return s;
  };
  return { relay, echo, dial, close: async () => { await relay.close(); await new Promise((r) => echo.close(r)); } };
}

/** One round trip of `bytes` through the echo; resolves to ms. */
async function roundTrip(s: Socket, bytes = 1): Promise<number> {
  const t0 = performance.now();
  let got = 0;
  await new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => { got += d.length; if (got >= bytes) { done(); resolve(); } };
    const onError = (err: Error) => { done(); reject(err); };
    const onClose = () => { done(); reject(new Error('connection ended')); };
    const done = () => { s.off('data', onData); s.off('error', onError); s.off('close', onClose); };
    s.on('data', onData);
    s.once('error', onError);
    s.once('close', onClose);
    s.write(Buffer.alloc(bytes, 120));
  });
  return performance.now() - t0;
}

test('relay: a 60 ms link each way adds 120 ms to a round trip', async () => {
  const { relay, dial, close } = await echoSetup([{ from: '*', to: '*', crossZone: true, latency: '60ms' }]);
  try {
    const s = await dial();
    const rtts: number[] = [];
    for (let i = 0; i < 10; i++) rtts.push(await roundTrip(s));
    s.destroy();
    rtts.sort((x, y) => x - y);
    const median = rtts[5]!;
    process.stdout.write(`# 60 ms link: round trips ${rtts.map((x) => x.toFixed(1)).join(' ')} ms (median ${median.toFixed(1)})\n`);
    // Never earlier than the links' delay; a loaded machine's timers may be late, so the upper bound is generous.
    assert.ok(rtts[0]! >= 119.5, `no round trip under 120 ms (min ${rtts[0]!.toFixed(1)})`);
    assert.ok(median < 200, `median round trip ${median.toFixed(1)} ms`);
    const st = relay.status();
    assert.equal(st.links['a>b']!.bytes, 10);
    assert.equal(st.links['b>a']!.bytes, 10);
    assert.equal(st.links['a>b']!.connections, 1, 'the caller is known by its source address');
  } finally {
    await close();
  }
});

test('relay: a 1 MB/s cap holds 1.5 MB to about 1.5 s', async () => {
  const { relay, dial, close } = await echoSetup([{ from: 'a', to: 'b', rate: '1MB', latency: '5ms' }]);
  try {
    const s = await dial();
    const bytes = 1_500_000;
    const ms = await roundTrip(s, bytes);
    s.destroy();
    const rate = bytes / (ms / 1000);
    process.stdout.write(`# 1 MB/s cap: 1.5 MB echoed in ${ms.toFixed(0)} ms (${(rate / 1e6).toFixed(3)} MB/s)\n`);
    assert.ok(ms >= 1490, `not faster than the cap (${ms.toFixed(0)} ms)`);
    assert.ok(ms < 3000, `close to the cap (${ms.toFixed(0)} ms)`);
    assert.equal(relay.status().links['b>a']!.profile.bytesPerSec, 0, 'the way back is not capped');
  } finally {
    await close();
  }
});

test('relay: a partition holds traffic until the heal, drop+reset breaks connections, commands over HTTP', async () => {
  const { relay, dial, close } = await echoSetup([{ from: '*', to: '*', latency: '2ms' }]);
  try {
    const s = await dial();
    assert.ok(await roundTrip(s) < 500);
    const command = async (text: string) => {
      const res = await fetch(`${relay.controlUrl}/command`, { method: 'POST', body: text });
      return { status: res.status, text: await res.text() };
    };
    assert.deepEqual(await command('partition eu us'), { status: 200, text: 'cut 2 directed links (hold)\n' });
    let got = 0;
    s.on('data', (d: Buffer) => { got += d.length; });
    s.write('held');
    assert.equal(await waitUntil(() => got > 0, 300), false, 'nothing crosses a partition');
    const healedAt = performance.now();
    assert.equal((await command('heal')).status, 200);
    assert.ok(await waitUntil(() => got === 4, 2000), 'held bytes arrive after the heal');
    process.stdout.write(`# held bytes delivered ${(performance.now() - healedAt).toFixed(1)} ms after the heal\n`);
    // drop + reset: the open connection is reset, and a new one across the cut too.
    const closed = new Promise<string>((resolve) => { s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error')); s.once('close', () => resolve('close')); });
    relay.run('partition a b drop reset');
    assert.equal(await closed, 'ECONNRESET');
    await assert.rejects(async () => { const t = await dial(); await roundTrip(t); }, /ECONNRESET|connection ended/);
    assert.equal((await command('bogus')).status, 400);
    relay.run('heal a b');
    const t = await dial();
    assert.ok(await roundTrip(t) < 500, 'a new connection works after the heal');
    // drop without reset: the bytes are lost, and the connection, now with a hole, is reset at the heal.
    relay.run('partition eu us drop');
    const broken = new Promise<string>((resolve) => t.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error')));
    t.write('lost');
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(relay.status().links['a>b']!.dropped, 4);
    relay.run('heal');
    assert.equal(await broken, 'ECONNRESET');
    const st = JSON.parse(relay.run('status')) as WanStatus;
    assert.ok(st.links['a>b']!.resets >= 3, 'the open and the new connection were reset, and the one with a hole at the heal');
    assert.deepEqual(st.cuts, []);
  } finally {
    await close();
  }
});

// ---------------------------------------------------------------- agents behind the relay


/** Established TCP connections to a local port, by remote IPv4 address (Linux /proc/net/tcp). */
function peersOfPort(port: number): string[] | null {
  if (!existsSync('/proc/net/tcp')) return null;
  const out: string[] = [];
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 4 || f[3] !== '01') continue; // 01 = ESTABLISHED
    const [, localPort] = f[1]!.split(':');
    if (parseInt(localPort!, 16) !== port) continue;
    const hex = f[2]!.split(':')[0]!;
    out.push([3, 2, 1, 0].map((i) => parseInt(hex.slice(i * 2, i * 2 + 2), 16)).join('.'));
  }
  return out;
}

test('two agents in two zones, connected only through the relay (30 ms each way), crawl a small web: every page once', async () => {
  const web = await startSyntheticWeb({ seed: 7, hosts: 12, pagesPerHost: 4, outLinks: 4, crossHostShare: 0.3, pageBytes: { min: 800, max: 1500 } });
  const dir = tempDir();
  const [p0, p1] = [await freePort(), await freePort()];
  const relay = await WanRelay.start({
    agents: [
      { name: 'a0', zone: 'eu', source: '127.0.0.11', target: `127.0.0.1:${p0}` },
      { name: 'a1', zone: 'us', source: '127.0.0.12', target: `127.0.0.1:${p1}` },
    ],
    links: [{ from: '*', to: '*', crossZone: true, latency: '30ms', jitter: '2ms' }],
  });
  try {
    const r0 = relay.addressOf('a0');
    const r1 = relay.addressOf('a1');
    const seeds = join(dir, 'seeds.txt');
    const { writeFileSync } = await import('node:fs');
    writeFileSync(seeds, web.roots().join('\n') + '\n');
    const a0 = startAgentProcess(web, dir, 'a0', ['--listen', `/ip4/127.0.0.1/tcp/${p0}`, '--announce', r0.multiaddr, '--source-address', '127.0.0.11']);
    await listeningOn(a0);
    const a1 = startAgentProcess(web, dir, 'a1', ['--listen', `/ip4/127.0.0.1/tcp/${p1}`, '--announce', r1.multiaddr, '--source-address', '127.0.0.12',
      '--seed', `${r0.host}:${r0.port}`, '--seed', seeds]);
    // Mid-crawl: whatever is connected to an agent's own port came through the relay (which dials from 127.0.0.1).
    const direct: string[] = [];
    const watch = setInterval(() => {
      for (const p of [p0, p1]) for (const ip of peersOfPort(p) ?? []) if (ip !== '127.0.0.1') direct.push(`${ip}→${p}`);
    }, 100);
    const t0 = performance.timeOrigin + performance.now();
    const results = await Promise.all([a0.done, a1.done]).finally(() => clearInterval(watch));
    const reqs = web.requests();
    process.stdout.write(`# crawl: first request ${reqs.length ? (reqs[0]!.start - t0).toFixed(0) : '-'} ms, last ${reqs.length ? (reqs[reqs.length - 1]!.start - t0).toFixed(0) : '-'} ms, exit ${(performance.timeOrigin + performance.now() - t0).toFixed(0)} ms after a1 started\n`);
    for (const r of results) assert.equal(r.code, 0, r.err.slice(-2000));
    const counts = pageCounts(web);
    const expected = web.reachable().reachableAllowed;
    assert.deepEqual([...expected].filter((u) => !counts.has(u)), [], 'every reachable page fetched');
    assert.deepEqual([...counts].filter(([, n]) => n > 1), [], 'no page fetched twice');
    assert.deepEqual(direct, [], 'no direct connection between the agents');
    const st = relay.status();
    process.stdout.write(`# relay: a0>a1 ${st.links['a0>a1']?.bytes} B, a1>a0 ${st.links['a1>a0']?.bytes} B, connections ${st.links['a1>a0']?.connections ?? 0}+${st.links['a0>a1']?.connections ?? 0}\n`);
    assert.ok((st.links['a0>a1']?.bytes ?? 0) > 1000 && (st.links['a1>a0']?.bytes ?? 0) > 1000, 'the mesh traffic went through the relay both ways');
    assert.equal(st.links['?>a0'], undefined, 'no caller the relay could not place');
    assert.equal(st.links['?>a1'], undefined, 'no caller the relay could not place');
    const byAgent = new Set(web.requests().map((r) => /\((a\d)\)/.exec(r.userAgent ?? '')?.[1]));
    assert.ok(byAgent.has('a0') && byAgent.has('a1'), 'both agents crawled');
  } finally {
    await relay.close();
    await web.close();
  }
});
