// Types for the undici modules src/fetch/undici-parts.ts loads one by one (undici has no `exports` map, so its
// files are reachable; their types are those of undici's index).
declare module 'undici/lib/dispatcher/agent.js' { const Agent: typeof import('undici').Agent; export default Agent; }
declare module 'undici/lib/dispatcher/client.js' { const Client: typeof import('undici').Client; export default Client; }
declare module 'undici/lib/dispatcher/proxy-agent.js' { const ProxyAgent: typeof import('undici').ProxyAgent; export default ProxyAgent; }
declare module 'undici/lib/core/connect.js' { const buildConnector: typeof import('undici').buildConnector; export default buildConnector; }
declare module 'undici/lib/dispatcher/dispatcher.js' { const Dispatcher: typeof import('undici').Dispatcher; export default Dispatcher; }
declare module 'undici/lib/api/index.js' { const api: Record<string, unknown>; export default api; }
declare module 'undici/lib/core/util.js' { const util: { parseHeaders(raw: Buffer[], obj?: Record<string, string | string[]>): Record<string, string | string[]> }; export default util; }
