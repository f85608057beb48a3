// The shared helper thread (src/util/helper-thread.ts). Each message holds items of one
// or more channels; each channel's handler module is loaded on its first use and exports
//   handle(items): { replies, transfer } | Promise<{ replies, transfer }>
// and, if its work is short and synchronous, `replyAtOnce = true`: such a channel is
// handled first and its replies posted at once. The others' replies of one event-loop
// turn go back as one message, their buffers transferred. A handler that throws (or fails to load) takes the thread down:
// the main thread then does that work inline (its owners' `onFail`).
import { parentPort } from 'node:worker_threads';
import type { HelperBatch } from './helper-thread.js';

/** What a channel's handler module exports. */
export type HelperHandler = (items: unknown[]) => HelperReplies | Promise<HelperReplies>;
export interface HelperReplies { replies: unknown[]; transfer: ArrayBuffer[] }

const port = parentPort;
if (port) {
  const modules: Record<string, string> = {};
  const loading = new Map<string, Promise<HelperHandler>>();
  const loaded = new Map<string, { handle: HelperHandler; atOnce: boolean }>();
  let out = new Map<string, unknown[]>();
  let transfer: ArrayBuffer[] = [];
  let scheduled = false;
  const flush = (): void => {
    scheduled = false;
    const batch: HelperBatch = [...out];
    const t = transfer;
    out = new Map();
    transfer = [];
    port.postMessage(batch, t);
  };
  const load = (name: string): Promise<HelperHandler> => {
    let h = loading.get(name);
    if (!h) {
      const url = modules[name];
      if (!url) throw new Error(`helper thread: no handler for channel ${name}`);
      h = import(url).then((m: { handle?: HelperHandler; replyAtOnce?: boolean }) => {
        if (typeof m.handle !== 'function') throw new Error(`helper thread: ${url} exports no handle()`);
        loaded.set(name, { handle: m.handle, atOnce: m.replyAtOnce === true });
        return m.handle;
      });
      loading.set(name, h);
    }
    return h;
  };
  const queue = (name: string, r: HelperReplies): void => {
    let list = out.get(name);
    if (!list) out.set(name, list = []);
    for (const x of r.replies) list.push(x);
    for (const b of r.transfer) transfer.push(b);
    if (!scheduled) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  // A rejection (a handler that throws or does not load) is left unhandled on purpose: it ends the thread,
  // and the owners take the work back (helper-thread.ts).
  const run = (name: string, h: HelperHandler, items: unknown[]): void => {
    const r = h(items);
    // A short synchronous handler's replies (the fingerprints: ≈ 0.1 ms a page) leave at once, not behind
    // the records the encoder is still building in this turn: the page waiting on them finishes sooner.
    // The others' replies leave once per turn.
    if (r instanceof Promise) void r.then((x) => queue(name, x));
    else if (loaded.get(name)?.atOnce) port.postMessage([[name, r.replies]] satisfies HelperBatch, r.transfer);
    else queue(name, r);
  };
  port.on('message', (msg: { modules?: Record<string, string>; batch: HelperBatch }) => {
    if (msg.modules) Object.assign(modules, msg.modules);
    // Synchronous channels first: their work is short and their replies go out before the rest starts.
    const later: Array<[string, unknown[]]> = [];
    for (const [name, items] of msg.batch) {
      const h = loaded.get(name);
      if (h?.atOnce) run(name, h.handle, items);
      else later.push([name, items]);
    }
    for (const [name, items] of later) {
      const h = loaded.get(name);
      if (h) run(name, h.handle, items);
      else void load(name).then((fn) => run(name, fn, items));
    }
  });
}
