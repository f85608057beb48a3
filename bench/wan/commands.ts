// The WAN emulator's control language (bench/wan/README.md), one command a
// line, the same on stdin and over the HTTP control port. Pure: parsing only.
import { parseProfilePatch, type LinkProfile } from './link.js';
import type { PartitionMode } from './topology.js';

export type WanCommand =
  | { kind: 'partition'; a: string; b: string; mode: PartitionMode; reset: boolean }
  | { kind: 'heal'; a?: string; b?: string }
  | { kind: 'set'; from: string; to: string; patch: Partial<LinkProfile>; crossZone?: boolean }
  | { kind: 'status' }
  | { kind: 'help' };

export const WAN_HELP = [
  'partition A B [hold|drop] [reset]   cut every link between A and B (agent names, zones, * or a,b lists)',
  '                                    hold: traffic waits for the heal (default); drop: it is lost and the',
  '                                    connection is reset at the heal; reset: reset open connections now',
  'heal [A B]                          heal the links between A and B, or every link',
  'set FROM TO key=value...            latency=60ms jitter=5ms rate=10mbit loss=0.01 stall=200ms [cross|inside]',
  'status                              per-link counters and the cut links (JSON)',
].join('\n');

/** Parses one command line; throws a one-line message for a bad one. */
export function parseWanCommand(line: string): WanCommand {
  const words = line.trim().split(/\s+/).filter(Boolean);
  const [verb, ...rest] = words;
  switch ((verb ?? '').toLowerCase()) {
    case 'partition': {
      if (rest.length < 2) throw new Error('usage: partition A B [hold|drop] [reset]');
      let mode: PartitionMode = 'hold';
      let reset = false;
      for (const w of rest.slice(2)) {
        if (w === 'hold' || w === 'drop') mode = w;
        else if (w === 'reset') reset = true;
        else throw new Error(`partition: unknown word ${w} (hold, drop, reset)`);
      }
      return { kind: 'partition', a: rest[0]!, b: rest[1]!, mode, reset };
    }
    case 'heal':
      if (rest.length === 0) return { kind: 'heal' };
      if (rest.length !== 2) throw new Error('usage: heal [A B]');
      return { kind: 'heal', a: rest[0]!, b: rest[1]! };
    case 'set': {
      if (rest.length < 3) throw new Error('usage: set FROM TO key=value...');
      const fields: Record<string, string> = {};
      let crossZone: boolean | undefined;
      for (const w of rest.slice(2)) {
        if (w === 'cross') { crossZone = true; continue; }
        if (w === 'inside') { crossZone = false; continue; }
        const eq = w.indexOf('=');
        if (eq <= 0) throw new Error(`set: expected key=value, got ${w}`);
        const key = w.slice(0, eq);
        if (!['latency', 'jitter', 'rate', 'bandwidth', 'loss', 'stall'].includes(key)) throw new Error(`set: unknown key ${key} (latency, jitter, rate, loss, stall)`);
        fields[key] = w.slice(eq + 1);
      }
      return { kind: 'set', from: rest[0]!, to: rest[1]!, patch: parseProfilePatch(fields), crossZone };
    }
    case 'status': return { kind: 'status' };
    case 'help': case '?': return { kind: 'help' };
    default: throw new Error(`unknown command ${verb ?? '(empty)'}: try help`);
  }
}
