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
  'Scorer',
  'createScoringService',
  'programs',
  'startServer',
].sort();

test('the package entry exports exactly the public list', (t) => {
  const api = require('pjrt-score');
  t.equal(api, require('..'), "require('pjrt-score') is the package root");
  const names = Object.keys(api).filter((n) => n !== '__esModule').sort();
  t.deepEqual(names, PUBLIC_NAMES, `exports: ${names.join(', ')}`);
  for (const n of names) t.notEqual(api[n], undefined, `${n} is defined`);
  t.end();
});

test('the ES module entry exports the same names', async (t) => {
  const esm = await import(path.join(__dirname, '..', 'dist', 'index.mjs'));
  const names = Object.keys(esm).filter((n) => n !== 'default').sort();
  t.deepEqual(names, PUBLIC_NAMES, 'dist/index.mjs');
});

// The framework adapters (docs/design.md "Integrations"): one file of lib/integrations each.
const ADAPTERS = { './ai-sdk': ['PROVIDER', 'PjrtScoreRerankingModel', 'PjrtScoreRerankingModelV3', 'fromScorer'], './langchain': ['PjrtScoreRerank', 'fromScorer'], './llamaindex': ['PjrtScoreRerank', 'fromScorer'] };

test('the subpaths are pinned: the root, one per room a user may reach, the framework adapters, package.json', (t) => {
  const pkg = require('../package.json');
  t.deepEqual(
    Object.keys(pkg.exports),
    ['.', './runtime', './hlo', './scoring', './model', './device-weights', './server', './assets', './ai-sdk', './langchain', './llamaindex', './package.json'],
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
    t.deepEqual(Object.keys(adapter).filter((n) => n !== '__esModule').sort(), names, `${sub} exports ${names.join(', ')}`);
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
  t.equal(r.stdout.trim(), 'pjrt-score/langchain needs the package @langchain/core: npm install @langchain/core', 'the missing peer is named');
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
