'use strict';
// scripts/ by job (docs/development.md, "scripts/, by job"): only its job
// folders at the top, every npm script's file in place, and every script
// path the docs and the tests cite in place.
const test = require('tape');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const JOBS = ['bench', 'build', 'lab', 'lib'];

test('scripts/ holds its job folders and nothing loose beside them', (t) => {
  const top = fs.readdirSync(path.join(root, 'scripts'), { withFileTypes: true });
  t.deepEqual(
    top.filter((e) => !e.isDirectory()).map((e) => e.name),
    [],
    'no file at the top of scripts/',
  );
  t.deepEqual(top.map((e) => e.name).sort(), JOBS, `the folders are ${JOBS.join(', ')}`);
  t.end();
});

test('every npm script that runs a file names one that exists', (t) => {
  let named = 0;
  for (const [name, command] of Object.entries(pkg.scripts)) {
    for (const m of command.matchAll(/(?:^|\s)node\s+(\S+\.m?js)/g)) {
      named++;
      t.ok(fs.existsSync(path.join(root, m[1])), `npm run ${name}: ${m[1]} exists`);
    }
  }
  t.ok(named >= 20, `${named} files named by npm scripts`);
  t.end();
});

test('every scripts/ path the docs, the README and the tests cite exists', (t) => {
  const docs = [
    'README.md',
    'deploy/README.md',
    'native/README.md',
    'bench-results/README.md',
    'CMakeLists.txt',
    '.ci/run',
  ];
  for (const dir of ['docs', 'test', 'test/helpers']) {
    for (const f of fs.readdirSync(path.join(root, dir))) if (/\.(md|js)$/.test(f)) docs.push(path.join(dir, f));
  }
  const cited = new Map();
  for (const file of docs.filter((f) => fs.existsSync(path.join(root, f)))) {
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    for (const m of text.matchAll(/(?<![\w./-])scripts\/[\w./-]*\w/g)) if (!cited.has(m[0])) cited.set(m[0], file);
  }
  t.ok(cited.size > 20, `${cited.size} distinct scripts/ paths cited`);
  for (const [p, file] of cited) t.ok(fs.existsSync(path.join(root, p)), `${p} (cited in ${file}) exists`);
  t.end();
});
