// The package's version, read once from package.json (the one place it is
// written): the CLI's --version, the API's status, the agent-info metric, the
// default User-Agent and the warcinfo `software` field all say the same.
import { readFileSync } from 'node:fs';

// Compiled to dist/src/version.js: the package root is two folders up.
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { name: string; version: string };

/** The package version, e.g. `1.2.3`. */
export const VERSION: string = pkg.version;

/** Product and version, e.g. `ubicrawl/1.2.3`: the User-Agent's first word and the warcinfo `software` field. */
export const SOFTWARE = `${pkg.name}/${VERSION}`;
