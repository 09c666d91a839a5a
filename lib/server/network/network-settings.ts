/**
 * The settings a service facing a network needs (docs/service.md, "Deploying
 * on a network"): API keys, CORS origins, TLS files. Rows of the serve
 * settings table (settings/serve-settings.ts); the standalone service applies them, a
 * fastify or express mount takes an `authorize` hook instead.
 */
import { OptionError, Setting, stringSetting } from '../../scoring';

/** A key is visible ASCII: no spaces, no commas (the variable's separator), nothing that cannot travel in a header. */
export const API_KEY_PATTERN = /^[\x21-\x2b\x2d-\x7e]+$/;

/** Splits a comma-separated list (the variable; repeated flags arrive joined the same way). */
function splitList(text: string): string[] {
  return text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '');
}

/** `--api-key KEY` (repeatable, for rotation) or PJRT_SCORE_API_KEY=k1,k2. */
const apiKeySetting: Setting<'apiKey', readonly string[]> = {
  key: 'apiKey',
  flag: 'api-key',
  env: 'PJRT_SCORE_API_KEY',
  kind: 'custom',
  metavar: 'KEY',
  help:
    'require Authorization: Bearer KEY on every route but the probes /health, /readyz, /livez and the API page ' +
    '/docs (and /metrics, see --metrics-public); repeat the flag, ' +
    'or separate keys with commas in the variable, to accept several (rotation)',
  parse: (text, source) => {
    const keys = typeof text === 'string' ? splitList(text) : [];
    if (keys.length === 0) throw new OptionError(`${source} must name at least one key`);
    keys.forEach((key, i) => {
      if (!API_KEY_PATTERN.test(key))
        throw new OptionError(`${source}: key ${i + 1} has a character outside visible ASCII or a comma`);
    });
    return keys;
  },
  check: (value) => {
    if (!Array.isArray(value) || !value.every((key) => typeof key === 'string' && API_KEY_PATTERN.test(key))) {
      throw new TypeError('apiKey must be an array of keys of visible ASCII characters without commas');
    }
  },
};

/** `--metrics-public`: /metrics answers without a key (a scraper inside the cluster). */
const metricsPublicSetting: Setting<'metricsPublic', boolean> & { readonly default: false } = {
  key: 'metricsPublic',
  flag: 'metrics-public',
  env: 'PJRT_SCORE_METRICS_PUBLIC',
  kind: 'custom',
  metavar: '',
  default: false,
  help: 'with API keys on, let GET /metrics answer without a key (default: it needs one)',
  parse: (raw, source) => {
    if (raw === true || raw === '1' || raw === 'true' || raw === 'yes') return true;
    if (raw === false || raw === '0' || raw === 'false' || raw === 'no') return false;
    throw new OptionError(`${source} must be 1/true or 0/false, got ${JSON.stringify(raw)}`);
  },
  check: (value) => {
    if (typeof value !== 'boolean')
      throw new TypeError(`metricsPublic must be a boolean, got ${JSON.stringify(value)}`);
  },
};

/** `--cors-allow-origin`: `*` or origins (scheme://host[:port]) separated by commas. */
const corsAllowOriginSetting: Setting<'corsAllowOrigin', readonly string[]> & { readonly default: readonly string[] } =
  {
    key: 'corsAllowOrigin',
    flag: 'cors-allow-origin',
    env: 'PJRT_SCORE_CORS_ALLOW_ORIGIN',
    kind: 'custom',
    metavar: 'ORIGINS',
    default: [],
    help:
      'browser origins allowed to call the service (CORS): ' +
      '* or a comma-separated list of scheme://host[:port]; preflight requests are answered (default: none)',
    parse: (text, source) => {
      const origins = typeof text === 'string' ? splitList(text) : [];
      if (origins.length === 0) throw new OptionError(`${source} must be * or a comma-separated list of origins`);
      for (const origin of origins) {
        if (origin !== '*' && !isOrigin(origin))
          throw new OptionError(
            `${source}: ${JSON.stringify(origin)} is not * or an origin such as https://app.example.com`,
          );
      }
      return origins;
    },
    check: (value) => {
      if (!Array.isArray(value) || !value.every((o) => o === '*' || (typeof o === 'string' && isOrigin(o)))) {
        throw new TypeError(
          `corsAllowOrigin must be an array of origins (scheme://host[:port]) or ['*'], got ${JSON.stringify(value)}`,
        );
      }
    },
  };

function isOrigin(text: string): boolean {
  return /^https?:\/\/[A-Za-z0-9.\-[\]:]+$/.test(text);
}

export const NETWORK_SETTINGS = [
  apiKeySetting,
  stringSetting('apiKeyFile', {
    flag: 'api-key-file',
    env: 'PJRT_SCORE_API_KEY_FILE',
    metavar: 'PATH',
    help:
      'keys one a line (blank lines and # comments skipped), ' +
      'e.g. a mounted Kubernetes Secret; re-read on SIGHUP, so a removed key is refused from then on',
  }),
  metricsPublicSetting,
  corsAllowOriginSetting,
  stringSetting('tlsCert', {
    flag: 'tls-cert',
    env: 'PJRT_SCORE_TLS_CERT',
    metavar: 'PATH',
    help: 'serve HTTPS with this PEM certificate (chain) and --tls-key; both re-read on SIGHUP',
  }),
  stringSetting('tlsKey', {
    flag: 'tls-key',
    env: 'PJRT_SCORE_TLS_KEY',
    metavar: 'PATH',
    help: 'the PEM private key of --tls-cert',
  }),
  stringSetting('otlpEndpoint', {
    flag: 'otlp-endpoint',
    env: 'PJRT_SCORE_OTLP_ENDPOINT',
    metavar: 'URL',
    help:
      'send OpenTelemetry traces (a span per request: body, tokenize, queue wait, device passes, reply) over ' +
      'OTLP/HTTP to URL (/v1/traces added); OTEL_EXPORTER_OTLP_[TRACES_]ENDPOINT work too; ' +
      'needs the optional @opentelemetry packages',
  }),
] as const;

/** The keys of the network rows: the standalone server's, not a mount's. */
export type NetworkSettingKey = (typeof NETWORK_SETTINGS)[number]['key'];
