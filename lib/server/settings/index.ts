/**
 * lib/server/settings: the service's settings table (serve-settings.ts: the
 * Scorer's rows, the network's and the service's own, each with its flag,
 * variable, default and help) and `--warmup`'s spec (warmup-spec.ts).
 * May import: network.
 */
export {
  DEFAULT_SERVE_OPTIONS,
  SERVE_SETTINGS,
  resolveServeOptions,
  type ServeOptions,
  type SettingSpec,
} from './serve-settings';
