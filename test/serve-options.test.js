'use strict';
// The settings table drives every way an option comes in: each bad choice,
// from a flag or from its environment variable, is a usage error (exit 2)
// that names the flag (or variable) and every accepted value, before the
// service loads a model or listens; the service passes every Scorer row on
// to the Scorer, and the Scorer checks a library caller's value by the same row.
const test = require('tape');
const { spawn } = require('node:child_process');
const { BIN } = require('./helpers/service');
const {
  SERVE_SETTINGS,
  DEFAULT_SERVE_OPTIONS,
  resolveServeOptions,
  scorerSettingsOf,
} = require('../dist/server/settings/serve-settings');
const { SCORER_SETTINGS, pickSettings } = require('../dist/scoring');

function cli(args, env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    const out = [];
    const err = [];
    child.stdout.on('data', (c) => out.push(c));
    child.stderr.on('data', (c) => err.push(c));
    child.on('error', reject);
    child.on('close', (code) =>
      resolve({ code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') }),
    );
  });
}

const CHOICE_ROWS = SERVE_SETTINGS.filter((s) => s.choices);

test('the choice settings: algorithm, precision, weights, batching, rerank template', (t) => {
  t.deepEqual(
    CHOICE_ROWS.map((s) => s.flag).sort(),
    ['algorithm', 'batching', 'precision', 'rerank-template', 'weights'],
    'every list of choices is a row',
  );
  t.end();
});

test('a bad choice from a flag exits 2 before listening, naming the flag and the choices', async (t) => {
  for (const row of CHOICE_ROWS) {
    // A free port, so a run that got past the options would listen (and say so on stdout).
    const run = await cli(['serve', '--port', '0', '--warmup', 'none', `--${row.flag}`, 'foo']);
    t.equal(run.code, 2, `--${row.flag} foo: exit 2`);
    t.ok(
      run.stderr.includes(`--${row.flag} must be one of ${row.choices.join(', ')}, got "foo"`),
      `names the flag and the choices: ${run.stderr.split('\n')[0]}`,
    );
    t.notOk(/"listening"|model_loaded/.test(run.stdout), 'nothing listened or loaded');
  }
});

test('a bad choice from the environment exits 2, naming the variable', async (t) => {
  const row = CHOICE_ROWS.find((s) => s.flag === 'precision');
  const run = await cli(['serve', '--port', '0'], { [row.env]: 'foo' });
  t.equal(run.code, 2, `${row.env}=foo: exit 2`);
  t.ok(
    run.stderr.includes(`${row.env} must be one of highest, default, bf16, auto, got "foo"`),
    run.stderr.split('\n')[0],
  );
  t.end();
});

test('one row each: flags, variables, defaults and the Scorer options come from the table', (t) => {
  const flags = new Set(SERVE_SETTINGS.map((s) => s.flag));
  const envs = new Set(SERVE_SETTINGS.map((s) => s.env));
  const keys = new Set(SERVE_SETTINGS.map((s) => s.key));
  t.equal(flags.size, SERVE_SETTINGS.length, 'no flag twice');
  t.equal(envs.size, SERVE_SETTINGS.length, 'no variable twice');
  t.equal(keys.size, SERVE_SETTINGS.length, 'no key twice');
  for (const s of SERVE_SETTINGS) {
    if (s.default !== undefined)
      t.deepEqual(DEFAULT_SERVE_OPTIONS[s.key], s.default, `${s.key}: the default is the row's`);
  }
  t.deepEqual(
    [DEFAULT_SERVE_OPTIONS.host, DEFAULT_SERVE_OPTIONS.port],
    ['127.0.0.1', 30000],
    'by default the service listens on loopback, port 30000',
  );
  t.deepEqual(
    Object.keys(DEFAULT_SERVE_OPTIONS).sort(),
    SERVE_SETTINGS.filter((s) => s.default !== undefined)
      .map((s) => s.key)
      .sort(),
    'no default outside the table',
  );
  // Each Scorer row, given as a flag, reaches the Scorer's options under its key.
  const flagsIn = {};
  const expected = {};
  for (const s of SCORER_SETTINGS) {
    const text = s.choices
      ? s.choices[s.choices.length - 1]
      : s.kind === 'integer'
        ? String((s.min ?? 0) + 3)
        : s.kind === 'switch-off'
          ? true
          : 'x';
    flagsIn[s.flag] = text;
    expected[s.key] = s.parse(text, `--${s.flag}`);
  }
  const resolved = resolveServeOptions(flagsIn, {});
  t.deepEqual(scorerSettingsOf(resolved), expected, 'every Scorer row passes from the flag to the Scorer options');
  // A library caller's bad value is refused by the same row.
  for (const s of SCORER_SETTINGS.filter((row) => row.choices)) {
    t.throws(
      () => pickSettings(SCORER_SETTINGS, { [s.key]: 'foo' }),
      (e) => e instanceof TypeError && e.message.includes(`${s.key} must be one of ${s.choices.join(', ')}`),
      `${s.key}: 'foo' refused`,
    );
  }
  t.end();
});

test('network rows: repeated --api-key, the comma list of PJRT_SCORE_API_KEY, CORS origins, TLS in pairs', async (t) => {
  t.deepEqual(resolveServeOptions({ 'api-key': ['k1', 'k2'] }, {}).apiKey, ['k1', 'k2'], 'a repeated flag: both keys');
  t.deepEqual(
    resolveServeOptions({}, { PJRT_SCORE_API_KEY: 'k1, k2,,k3' }).apiKey,
    ['k1', 'k2', 'k3'],
    'the variable: a comma-separated list',
  );
  t.deepEqual(
    resolveServeOptions({ 'api-key': ['k9'] }, { PJRT_SCORE_API_KEY: 'k1' }).apiKey,
    ['k9'],
    'the flag wins over the variable',
  );
  t.equal(DEFAULT_SERVE_OPTIONS.apiKey, undefined, 'no key by default');
  t.deepEqual(DEFAULT_SERVE_OPTIONS.corsAllowOrigin, [], 'no CORS origin by default');
  t.equal(DEFAULT_SERVE_OPTIONS.metricsPublic, false, '/metrics needs a key by default (with keys on)');
  t.equal(resolveServeOptions({ 'metrics-public': true }, {}).metricsPublic, true, '--metrics-public');
  t.deepEqual(
    resolveServeOptions({}, { PJRT_SCORE_CORS_ALLOW_ORIGIN: 'https://a.example,http://localhost:5173' })
      .corsAllowOrigin,
    ['https://a.example', 'http://localhost:5173'],
    'origins',
  );
  for (const [flags, env, message] of [
    [{ 'api-key': ['has space'] }, {}, /--api-key: key 1 has a character outside visible ASCII or a comma/],
    [{}, { PJRT_SCORE_API_KEY: ' , ' }, /PJRT_SCORE_API_KEY must name at least one key/],
    [{ 'cors-allow-origin': 'example.com' }, {}, /"example.com" is not \* or an origin/],
    [{ 'tls-cert': '/c.pem' }, {}, /--tls-cert and --tls-key go together/],
  ]) {
    t.throws(() => resolveServeOptions(flags, env), message, message.source);
  }
  const keyless = require('node:path').join(require('node:os').tmpdir(), `pjrt-score-empty-keys-${process.pid}`);
  require('node:fs').writeFileSync(keyless, '# nothing yet\n');
  const run = await cli(['serve', '--port', '0', '--warmup', 'none', '--api-key-file', keyless]);
  require('node:fs').rmSync(keyless);
  t.equal(run.code, 2, 'a key file without a key: exit 2');
  t.ok(run.stderr.includes('holds no key'), run.stderr.split('\n')[0]);
  t.notOk(/"listening"/.test(run.stdout), 'nothing listened');
});

test('serve --help lists every route of the route table, with its methods', (t) => {
  const { serveHelp } = require('../dist/cli/serve');
  const { ROUTES } = require('../dist/server/routes/table');
  const header = serveHelp().split('Options:')[0];
  for (const route of ROUTES) {
    const methods = route.methods.filter((m) => m !== 'HEAD').join(', ');
    t.ok(header.includes(`${methods} ${route.path} `), `${methods} ${route.path}`);
  }
  t.equal(
    ROUTES.length,
    22,
    "twenty-two routes (score, three rerank, health, models, model, info, metrics, openapi; readyz, livez; a gateway's: server_info, model_info and their get_ names, version, v1/loads, loads, get_load; the API reference: docs and its assets)",
  );
  t.end();
});
