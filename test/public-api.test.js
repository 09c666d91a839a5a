'use strict';
// The package's public API is a decision: the names require('pjrt-score')
// exports must equal this list (README.md "Library" documents each one), and
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

test('the subpaths are pinned: the root, one per room a user may reach, package.json', (t) => {
  const pkg = require('../package.json');
  t.deepEqual(Object.keys(pkg.exports), ['.', './runtime', './hlo', './scoring', './model', './device-weights', './server', './assets', './package.json'], 'exports keys');
  t.end();
});

test('each subpath in package.json "exports" is a room index that loads', (t) => {
  const pkg = require('../package.json');
  const subpaths = Object.keys(pkg.exports).filter((k) => k !== '.' && k !== './package.json');
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
