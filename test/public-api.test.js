'use strict';
// The package's public API is a decision: the names require('pjrt-score')
// exports must equal this list (docs/scorer-api.md documents each one), and
// each documented subpath resolves to its room.
const test = require('tape');
const path = require('node:path');

const PUBLIC_NAMES = [
  'Client',
  'DeviceBuffer',
  'DisposedError',
  'Executable',
  'HloBuildError',
  'ModelNotFoundError',
  'PjrtError',
  'PluginNotFoundError',
  'ScoreInputError',
  'QueueFullError',
  'AbortError',
  'TemplateError',
  // issue 62: one base with a string code, and every error the public API can throw
  'PjrtScoreError',
  'OptionError',
  'FetchError',
  'HubError',
  'GgufError',
  'SafetensorsError',
  'ModelConfigError',
  'WeightsError',
  'TokenizerError',
  'Scorer',
  'createScoringService',
  'programs',
  'startServer',
].sort();

test('the package entry exports exactly the public list', (t) => {
  const api = require('pjrt-score');
  t.equal(api, require('..'), "require('pjrt-score') is the package root");
  const names = Object.keys(api)
    .filter((n) => n !== '__esModule')
    .sort();
  t.deepEqual(names, PUBLIC_NAMES, `exports: ${names.join(', ')}`);
  for (const n of names) t.notEqual(api[n], undefined, `${n} is defined`);
  t.end();
});

test('the ES module entry exports the same names', async (t) => {
  const esm = await import(path.join(__dirname, '..', 'dist', 'index.mjs'));
  const names = Object.keys(esm)
    .filter((n) => n !== 'default')
    .sort();
  t.deepEqual(names, PUBLIC_NAMES, 'dist/index.mjs');
});

// The framework adapters (docs/design.md "Integrations"): one file of lib/integrations each.
const ADAPTERS = {
  './ai-sdk': ['PROVIDER', 'PjrtScoreRerankingModel', 'PjrtScoreRerankingModelV3', 'fromScorer'],
  './langchain': ['PjrtScoreRerank', 'fromScorer'],
  './llamaindex': ['PjrtScoreRerank', 'fromScorer'],
};

test('the subpaths are pinned: the root, one per room a user may reach, the framework adapters, package.json', (t) => {
  const pkg = require('../package.json');
  t.deepEqual(
    Object.keys(pkg.exports),
    [
      '.',
      './runtime',
      './hlo',
      './scoring',
      './model',
      './device-weights',
      './server',
      './assets',
      './ai-sdk',
      './langchain',
      './llamaindex',
      './package.json',
    ],
    'exports keys',
  );
  t.end();
});

test('each adapter subpath is its file of lib/integrations, exports its names, and its framework is an optional peer', (t) => {
  const pkg = require('../package.json');
  for (const [sub, names] of Object.entries(ADAPTERS)) {
    const target = pkg.exports[sub].default;
    t.equal(target, `./dist/integrations/${sub.slice(2)}.js`, `${sub} -> ${target}`);
    t.equal(pkg.exports[sub].types, `./dist/integrations/${sub.slice(2)}.d.ts`, `${sub} types`);
    const adapter = require(`pjrt-score/${sub.slice(2)}`);
    t.equal(adapter, require(path.join(__dirname, '..', target)), `require('pjrt-score/${sub.slice(2)}') is that file`);
    t.deepEqual(
      Object.keys(adapter)
        .filter((n) => n !== '__esModule')
        .sort(),
      names,
      `${sub} exports ${names.join(', ')}`,
    );
  }
  for (const peer of ['ai', '@ai-sdk/provider', '@langchain/core', 'llamaindex']) {
    t.ok(pkg.peerDependencies[peer], `${peer} is a peer dependency`);
    t.deepEqual(pkg.peerDependenciesMeta[peer], { optional: true }, `${peer} is optional`);
    t.match(pkg.devDependencies[peer], /^\d+\.\d+\.\d+$/, `${peer} is an exact devDependency for the tests`);
  }
  t.end();
});

test('the root entry loads without any framework package', (t) => {
  // A child whose resolver cannot see the frameworks: the root entry and the
  // integrations index load; the LangChain adapter names the package to install.
  const { spawnSync } = require('node:child_process');
  const script = `
    const Module = require('node:module');
    const hidden = /^(ai|@ai-sdk\\/|@langchain\\/|llamaindex|@llamaindex\\/)/;
    const resolve = Module._resolveFilename;
    Module._resolveFilename = function (request, ...rest) {
      if (hidden.test(request)) { const e = new Error("Cannot find module '" + request + "'"); e.code = 'MODULE_NOT_FOUND'; throw e; }
      return resolve.call(this, request, ...rest);
    };
    const api = require('pjrt-score');
    if (typeof api.Scorer !== 'function') throw new Error('no Scorer');
    require('pjrt-score/ai-sdk');
    require('pjrt-score/llamaindex');
    try { require('pjrt-score/langchain'); console.log('loaded'); } catch (e) { console.log(e.message); }
  `;
  const r = spawnSync(process.execPath, ['-e', script], { cwd: path.join(__dirname, '..'), encoding: 'utf8' });
  t.equal(r.status, 0, `exit 0${r.status ? `: ${r.stderr.slice(-500)}` : ''}`);
  t.equal(
    r.stdout.trim(),
    'pjrt-score/langchain needs the package @langchain/core: npm install @langchain/core',
    'the missing peer is named',
  );
  t.end();
});

test('each room subpath in package.json "exports" is a room index that loads', (t) => {
  const pkg = require('../package.json');
  const subpaths = Object.keys(pkg.exports).filter((k) => k !== '.' && k !== './package.json' && !(k in ADAPTERS));
  t.ok(subpaths.length > 0, `subpaths: ${subpaths.join(', ')}`);
  for (const sub of subpaths) {
    const target = pkg.exports[sub].default;
    t.equal(target, `./dist/${sub.slice(2)}/index.js`, `${sub} -> ${target}`);
    // The package resolving itself by name goes through the "exports" map.
    const room = require(`pjrt-score/${sub.slice(2)}`);
    t.equal(room, require(path.join(__dirname, '..', target)), `require('pjrt-score/${sub.slice(2)}') is that file`);
    t.ok(Object.keys(room).length > 0, `${sub} exports ${Object.keys(room).length} names`);
  }
  t.end();
});

// docs/scorer-api.md "Errors": every error class of lib/ is a PjrtScoreError; the
// ones the public API can throw are exported from the root; each class's codes
// are the ones its row of the table names.

/** Every `class X extends Y` of lib/ whose chain reaches Error: name -> { base, file, exported }. */
function errorClasses() {
  const fs = require('node:fs');
  const lib = path.join(__dirname, '..', 'lib');
  const all = new Map();
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) walk(full);
      else if (e.name.endsWith('.ts')) {
        for (const m of fs.readFileSync(full, 'utf8').matchAll(/^(export )?class (\w+) extends (\w+)/gm)) {
          all.set(m[2], { base: m[3], file: path.relative(lib, full), exported: Boolean(m[1]) });
        }
      }
    }
  };
  walk(lib);
  const reachesError = (name, seen = new Set()) => {
    if (/^(Range|Type)?Error$/.test(name)) return true;
    const c = all.get(name);
    if (!c || seen.has(name)) return false;
    seen.add(name);
    return reachesError(c.base, seen);
  };
  return new Map([...all].filter(([name]) => reachesError(name)));
}

/** docs/scorer-api.md's table: class -> its codes (PJRT's status names stand as 'PjrtErrorCode'). */
function documentedCodes() {
  const text = require('node:fs').readFileSync(path.join(__dirname, '..', 'docs', 'scorer-api.md'), 'utf8');
  const start = text.indexOf('\n## Errors\n');
  const section = text.slice(start, text.indexOf('\n## ', start + 1));
  const rows = new Map();
  for (const line of section.split('\n')) {
    const m = /^\| (.+?) \| `(\w+)` \| .+ \|$/.exec(line);
    if (!m || m[2] === 'class') continue;
    const codes = /PjrtErrorCode/.test(m[1])
      ? ['PjrtErrorCode']
      : [...m[1].matchAll(/`([A-Z0-9_]+)`/g)].map((c) => c[1]);
    rows.set(m[2], codes);
  }
  return rows;
}

// How to make one of each: the arguments of each constructor (the code comes from the class, or from an argument where the class has several).
const MAKE = {
  ScoreInputError: () => [['m', 'query']],
  QueueFullError: () => [[64, 1]],
  AbortError: () => [[]],
  TemplateError: () => [['m']],
  OptionError: () => [['m']],
  ModelNotFoundError: () => [['m']],
  PluginNotFoundError: () => [['m']],
  FetchError: () => [['m']],
  HubError: (codes) => codes.map((c) => ['m', c]),
  GgufError: (codes) => [['m'], ...codes.map((c) => ['m', c])],
  SafetensorsError: () => [['m']],
  ModelConfigError: () => [['m']],
  WeightsError: () => [['m']],
  TokenizerError: () => [['m']],
  DisposedError: () => [['the client']],
  PjrtError: () => [['m', 'INVALID_ARGUMENT']],
  HloBuildError: () => [['m']],
  BucketOverflowError: () => [['items', 9, 8]],
  HttpError: () => [[400, 'm']],
  UsageError: () => [['m', 'score']],
  WarmupSpecError: () => [['m']],
};
// Where the classes the root does not export live (dist/).
const NOT_AT_ROOT_FROM = {
  BucketOverflowError: 'scoring',
  HttpError: 'server',
  UsageError: 'cli/args',
  WarmupSpecError: 'server/settings/warmup-spec',
};
// Error classes the root does not export, and why a caller of the public API never meets them as such.
const NOT_AT_ROOT = {
  BucketOverflowError:
    'pjrt-score/scoring: bucketFor past its ladder; the request limits refuse such sizes first (ScoreInputError)',
  HttpError: "pjrt-score/server: the routes' answer before it is a body, never thrown to a caller",
  UsageError: 'the command line only: printed with exit 2',
  WarmupSpecError: 'serve settings only: reported as an OptionError',
  DeadlineError: "the service's own AbortError (a 504)",
  ClientGoneError: "the service's own AbortError (a 499)",
};

test('every error class of lib/ is a PjrtScoreError, and every one the public API can throw is exported from the root', (t) => {
  const api = require('pjrt-score');
  const classes = errorClasses();
  t.ok(classes.size >= 20, `${classes.size} error classes in lib/`);
  const chain = (name) =>
    name === 'PjrtScoreError' ? [name] : classes.has(name) ? [name, ...chain(classes.get(name).base)] : [name];
  for (const [name, c] of classes) {
    if (name === 'PjrtScoreError') continue;
    t.equal(
      chain(name).pop(),
      'PjrtScoreError',
      `${name} (${c.file}) extends PjrtScoreError: ${chain(name).join(' -> ')}`,
    );
    if (name in NOT_AT_ROOT) {
      t.notOk(name in api, `${name} is not at the root: ${NOT_AT_ROOT[name]}`);
      continue;
    }
    t.ok(
      typeof api[name] === 'function' && api[name].prototype instanceof api.PjrtScoreError,
      `${name} is exported from the root, a PjrtScoreError`,
    );
  }
  const rootErrors = Object.keys(api).filter((n) => /Error$/.test(n) && n !== 'PjrtScoreError');
  t.deepEqual(
    rootErrors.filter((n) => !classes.has(n)),
    [],
    'every error the root exports is a class of lib/',
  );
  t.end();
});

test('each error has its documented string code (docs/scorer-api.md "Errors")', (t) => {
  const api = require('pjrt-score');
  const documented = documentedCodes();
  const classes = errorClasses();
  const inTable = [...classes.keys()]
    .filter((n) => n !== 'PjrtScoreError' && n !== 'DeadlineError' && n !== 'ClientGoneError')
    .sort();
  t.deepEqual(
    [...documented.keys()].sort(),
    inTable,
    "the table has a row for each error class (the service's own AbortErrors aside)",
  );
  for (const [name, make] of Object.entries(MAKE)) {
    const codes = documented.get(name) || [];
    const seen = new Set();
    const Class = name in NOT_AT_ROOT_FROM ? require(`../dist/${NOT_AT_ROOT_FROM[name]}`)[name] : api[name];
    for (const args of make(codes)) {
      const error = new Class(...args);
      t.ok(error instanceof api.PjrtScoreError && error instanceof Error, `${name}: a PjrtScoreError`);
      t.equal(error.name, name, `${name}: name`);
      t.equal(typeof error.code, 'string', `${name}: code ${error.code} is a string`);
      seen.add(error.code);
      if (name === 'PjrtError')
        t.equal(codes[0], 'PjrtErrorCode', "PjrtError: PJRT's status names, documented as PjrtErrorCode");
      else t.ok(codes.includes(error.code), `${name}: code ${error.code} is its row's (${codes.join(', ')})`);
    }
    if (name !== 'PjrtError')
      t.deepEqual([...seen].sort(), [...codes].sort(), `${name}: every code of its row is one it has`);
  }
  t.deepEqual(Object.keys(MAKE).sort(), inTable, 'each error of the table is made here');
  t.end();
});
