// The parts of undici the fetcher uses, each from its own module. undici's index loads all of undici (fetch,
// WebSocket, EventSource, cookies, caches, mock agents): about 75 ms more at every start, which must reach its
// first request within half a second (docs/performance.md "Start-up"). Types: ./undici-modules.d.ts.
import Agent from 'undici/lib/dispatcher/agent.js';
import Client from 'undici/lib/dispatcher/client.js';
import ProxyAgent from 'undici/lib/dispatcher/proxy-agent.js';
import Dispatcher from 'undici/lib/dispatcher/dispatcher.js';
import buildConnector from 'undici/lib/core/connect.js';
import api from 'undici/lib/api/index.js';
import util from 'undici/lib/core/util.js';

// undici's index gives every dispatcher its API methods (request, and connect, which ProxyAgent's tunnels use) by
// assigning them onto Dispatcher.prototype; done here the same way, unless undici's index was loaded too.
if (typeof Dispatcher.prototype.request !== 'function') Object.assign(Dispatcher.prototype, api);

/** undici's own header parser (what request() gives its callers): lower-case names, repeated fields as arrays. */
export const parseHeaders = util.parseHeaders;

export { Agent, Client, ProxyAgent, buildConnector };
