// Startup checks, run before anything starts (no store, no mesh, no fetch):
// every way a start can fail on its options or its machine is found here and
// reported as one StartupError, which the CLI prints as one line and exits 2
// (docs/cli.md "Exit codes"). The API listener is bound here too, so a port in
// use is one of these errors; its backend is attached once the agent runs.
import { mkdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { multiaddr } from '@multiformats/multiaddr';
import type { AgentConfig } from '../config.js';
import type { ApiServer } from '../api/server.js';
import { apiTokenPath, ensureTokenFile, readTokenFile } from '../api/token.js';
import { checkSwarmKey, meshExposureError } from '../mesh/node.js';
import { requestOptions } from '../fetch/requests.js';
import type { Logger } from '../util/log.js';

/** A start refused because of its options or its environment: nothing was started. */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}

export interface PreflightResult {
  /** The API, listening but without a backend yet (requests get 503 until `attach`); undefined without --api. */
  api: ApiServer | undefined;
}

const reason = (err: unknown): string => (err as NodeJS.ErrnoException).code ?? (err as Error).message;

/** Runs every startup check in order; throws StartupError on the first that fails. */
export async function preflight(config: AgentConfig, log: Logger): Promise<PreflightResult> {
  // The API server (and its dashboard) is loaded only when asked for: most agents run without one, and
  // compiling it is part of every start (docs/performance.md "Start-up").
  const server = config.api.listen === undefined ? undefined : await import('../api/server.js');
  checkOptions(config, server);
  checkDataDir(config.dataDir);
  if (config.api.listen === undefined || server === undefined) return { api: undefined };
  const { startApiServer } = server;
  // Without a token file of the operator's, the agent's own token guards the mutating routes and
  // loopback reads stay open; with one, every route needs it (docs/operations.md "API security").
  const ownToken = config.api.tokenFile === undefined;
  let tokenFile = config.api.tokenFile;
  if (ownToken) {
    tokenFile = apiTokenPath(config.dataDir);
    try { ensureTokenFile(tokenFile); } catch (err) { throw new StartupError(`cannot create the API token ${tokenFile}: ${(err as Error).message}`); }
  }
  try {
    return { api: await startApiServer({ listen: config.api.listen, tokenFile, openReads: ownToken, logger: log }) };
  } catch (err) {
    throw new StartupError((err as Error).message);
  }
}

/** Checks that need no I/O but reading the files the options name. */
function checkOptions(config: AgentConfig, server: typeof import('../api/server.js') | undefined): void {
  // Header fields and proxy URLs, including the environment's (docs/requests.md).
  try { requestOptions(config.requests); } catch (err) { throw new StartupError((err as Error).message); }
  if (config.api.listen !== undefined && server !== undefined) {
    try {
      const { host } = server.parseListen(config.api.listen);
      server.assertListenAllowed(host, config.api.tokenFile !== undefined);
      if (config.api.tokenFile !== undefined) readTokenFile(config.api.tokenFile);
    } catch (err) {
      throw new StartupError((err as Error).message);
    }
  }
  if (!config.mesh.enabled) return;
  for (const [what, list] of [['listen', config.mesh.listen], ['announce', config.mesh.announce]] as const) {
    for (const a of list) {
      try { multiaddr(a); } catch (err) { throw new StartupError(`invalid --${what} address "${a}": ${(err as Error).message}`); }
    }
  }
  // Listening beyond loopback without a swarm key is refused unless asked for (docs/mesh.md "Admission").
  const exposure = meshExposureError(config.mesh.listen, { swarmKey: config.mesh.swarmKeyFile !== undefined, openMesh: config.mesh.openMesh });
  if (exposure) throw new StartupError(exposure);
  if (config.mesh.swarmKeyFile !== undefined) {
    let key: Buffer;
    try { key = readFileSync(config.mesh.swarmKeyFile); } catch (err) {
      throw new StartupError(`cannot read the swarm key ${config.mesh.swarmKeyFile}: ${reason(err)}`);
    }
    try { checkSwarmKey(key); } catch (err) { throw new StartupError(`${config.mesh.swarmKeyFile}: ${(err as Error).message}`); }
  }
}

/** The data dir exists (created if missing), is a directory, and takes a new file. */
function checkDataDir(dir: string): void {
  try {
    if (!statSync(dir).isDirectory()) throw new StartupError(`the data dir ${dir} is not a directory`);
  } catch (err) {
    if (err instanceof StartupError) throw err;
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new StartupError(`cannot use the data dir ${dir}: ${reason(err)}`);
    try { mkdirSync(dir, { recursive: true }); } catch (e) { throw new StartupError(`cannot create the data dir ${dir}: ${reason(e)}`); }
  }
  // Permission bits do not tell (root, read-only mounts, ACLs): a real write does.
  const probe = join(dir, `.write-test-${process.pid}`);
  try {
    writeFileSync(probe, '');
    unlinkSync(probe);
  } catch (err) {
    throw new StartupError(`the data dir ${dir} is not writable: ${reason(err)}`);
  }
}
