/**
 * lib/server/network: what a service facing a network needs
 * (docs/service.md, "Deploying on a network"): the network settings' rows
 * (network-settings.ts), API keys (api-keys.ts), who may use a route
 * (access.ts: the keys' gate, a host's authorize hook), CORS (cors.ts) and
 * the TLS files (tls-files.ts).
 * May import: http.
 */
export { type AuthorizeHook } from './access';
