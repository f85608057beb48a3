// The shared helper thread (src/util/helper-thread.ts). Each message holds items of one
// or more channels; each channel's handler module is loaded on its first use and exports
//   handle(items): { replies, transfer } | Promise<{ replies, transfer }>
// Replies of every channel handled in one event-loop turn go back as one message, their
// buffers transferred. A handler that throws (or fails to load) takes the thread down:
// the main thread then does that work inline (its owners' `onFail`).
import { parentPort } from 'node:worker_threads';
import type { HelperBatch } from './helper-thread.js';

/** What a channel's handler module exports. */
export type HelperHandler = (items: unknown[]) => HelperReplies | Promise<HelperReplies>;
export interface HelperReplies { replies: unknown[]; transfer: ArrayBuffer[] }

const port = parentPort;
if (port) {
  const modules: Record<string, string> = {};
  const handlers = new Map<string, Promise<HelperHandler>>();
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
  const handlerOf = (name: string): Promise<HelperHandler> => {
    let h = handlers.get(name);
    if (!h) {
      const url = modules[name];
      if (!url) throw new Error(`helper thread: no handler for channel ${name}`);
      h = import(url).then((m: { handle?: HelperHandler }) => {
        if (typeof m.handle !== 'function') throw new Error(`helper thread: ${url} exports no handle()`);
        return m.handle;
      });
      handlers.set(name, h);
    }
    return h;
  };
  port.on('message', async (msg: { modules?: Record<string, string>; batch: HelperBatch }) => {
    if (msg.modules) Object.assign(modules, msg.modules);
    for (const [name, items] of msg.batch) {
      const r = await (await handlerOf(name))(items);
      let list = out.get(name);
      if (!list) out.set(name, list = []);
      for (const x of r.replies) list.push(x);
      for (const b of r.transfer) transfer.push(b);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    }
  });
}
