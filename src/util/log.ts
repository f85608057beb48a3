// pino JSON lines on stderr (stdout stays free for summaries and command output).
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  return pino({ level, base: { pid: process.pid, ...bindings } }, pino.destination({ dest: 2, sync: false }));
}

export const silentLogger: Logger = pino({ level: 'silent' });
