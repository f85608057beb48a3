// The API's bearer token file (docs/operations.md "API security"): the agent
// creates `<data-dir>/api.token` on its first start with --api (unless a token
// file is given) and reuses it afterwards; the CLI client commands on the same
// machine read it from there.
import { closeSync, fsyncSync, linkSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

export const API_TOKEN_FILENAME = 'api.token';
/** Shorter tokens are refused: they can be guessed. */
export const MIN_TOKEN_LENGTH = 16;

/** The token file of the agent whose data dir is `dataDir`. */
export function apiTokenPath(dataDir: string): string {
  return join(dataDir, API_TOKEN_FILENAME);
}

/** Reads and checks a token file; throws an Error that names the file and the problem. */
export function readTokenFile(file: string): string {
  const token = readTokenFileIfPresent(file);
  if (token === undefined) throw new Error(`cannot read the API token file ${file}: ENOENT`);
  return token;
}

/** The token in `file`, or undefined when the file does not exist; any other problem throws. */
export function readTokenFileIfPresent(file: string): string | undefined {
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    throw new Error(`cannot read the API token file ${file}: ${code ?? (err as Error).message}`);
  }
  const token = text.trim();
  if (token.length < MIN_TOKEN_LENGTH) throw new Error(`the API token in ${file} is too short: use at least ${MIN_TOKEN_LENGTH} characters (e.g. \`openssl rand -hex 32\`)`);
  if (/\s/.test(token)) throw new Error(`the API token in ${file} must be one line without spaces`);
  return token;
}

/**
 * Returns the token in `file`, creating the file with a new random token
 * (mode 0600) when it does not exist. The new file appears complete or not at
 * all: written and synced under a temporary name, then hard-linked into place,
 * which fails rather than replaces should another process have created it
 * meanwhile (that token is then used).
 */
export function ensureTokenFile(file: string): string {
  const existing = readTokenFileIfPresent(file);
  if (existing !== undefined) return existing;
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  const fd = openSync(tmp, 'wx', 0o600);
  try {
    writeSync(fd, randomBytes(32).toString('hex') + '\n');
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(tmp);
  }
  return readTokenFile(file);
}
