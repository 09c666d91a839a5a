'use strict';
// Each room's index.ts says which rooms its files may import ("May import:
// ..."; docs/design.md "Rooms"). This reads every import of lib/<room>/**.ts
// and holds it to that line: a room named there may be imported, and where
// the line says "its index only", only through that room's index. A big room
// has sub-rooms, lib/<room>/<sub>/ (one level deep), each with an index.ts
// whose "May import:" line names the sibling sub-rooms it may import (or "no
// sibling"); the room's top-level files may import any of its sub-rooms, and
// no sub-room imports the room's top-level files.
const test = require('tape');
const fs = require('node:fs');
const path = require('node:path');

const LIB = path.join(__dirname, '..', 'lib');
const ROOMS = fs.readdirSync(LIB).filter((name) => fs.statSync(path.join(LIB, name)).isDirectory());

/**
 * { allowed: Set, indexOnly: Set } from the "May import:" sentence of `dir`/index.ts, keeping the names
 * among `names` (the rooms, or a room's sub-rooms); null where the index has no such line.
 */
function mayImport(dir, names) {
  const file = path.join(dir, 'index.ts');
  if (!fs.existsSync(file)) return null;
  const match = /May import:([\s\S]*?)(?:\*\/|\n \*\s*\n)/.exec(fs.readFileSync(file, 'utf8'));
  if (!match) return null;
  const sentence = match[1].replace(/\n \*/g, ' ');
  const allowed = new Set();
  const indexOnly = new Set();
  // "room (note), room, and room (note)": the notes say what of the room, or which rooms are not allowed.
  for (const part of sentence.split(/,|\band\b/)) {
    const m = /^\s*([a-z-]+)(?:\s+only)?\s*(\(([^)]*)\))?/.exec(part);
    if (!m || !names.includes(m[1])) continue;
    allowed.add(m[1]);
    if (m[3] && /index only/.test(m[3])) indexOnly.add(m[1]);
  }
  return { allowed, indexOnly };
}

/** A room's rule: the rooms its files may import. */
function rule(room) {
  return mayImport(path.join(LIB, room), ROOMS);
}

/** The folders of lib/<room>: its sub-rooms. */
function subRooms(room) {
  return fs.readdirSync(path.join(LIB, room)).filter((name) => fs.statSync(path.join(LIB, room, name)).isDirectory());
}

/** Every relative import of a file, as written. */
function imports(file) {
  const text = fs.readFileSync(file, 'utf8');
  return [...text.matchAll(/(?:from\s+|require\(|import\(|^import\s+)\s*'(\.{1,2}\/[^']*|\.\.?)'/gm)].map((m) => m[1]);
}

/** Every .ts file under `dir`, as paths relative to lib/. */
function tsFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return tsFiles(full);
    return e.name.endsWith('.ts') ? [path.relative(LIB, full)] : [];
  });
}

/**
 * Every room-crossing import of a file of lib/<room>/ (depth 0) or lib/<room>/<sub>/ (depth 1):
 * [room, subpath] ('' for the room's index).
 */
function crossings(file, depth) {
  const up = '../'.repeat(depth + 1);
  const out = [];
  for (const spec of imports(file)) {
    if (!spec.startsWith(up) || spec.startsWith(`${up}../`)) continue;
    const [target, ...rest] = spec.slice(up.length).split('/');
    out.push([target, rest.join('/')]);
  }
  return out;
}

test('every room states what it may import', (t) => {
  for (const room of ROOMS) t.ok(rule(room), `lib/${room}/index.ts has a "May import:" line`);
  t.end();
});

test("every import across rooms keeps its room's rule", (t) => {
  let checked = 0;
  for (const room of ROOMS) {
    const { allowed, indexOnly } = rule(room);
    for (const name of tsFiles(path.join(LIB, room))) {
      const depth = name.split(path.sep).length - 2;
      for (const [target, sub] of crossings(path.join(LIB, name), depth)) {
        checked++;
        if (!allowed.has(target))
          t.fail(
            `lib/${name} imports ${target}${sub ? `/${sub}` : ''}: ${room} may import ${[...allowed].join(', ') || 'nothing in lib/'}`,
          );
        else if (indexOnly.has(target) && sub !== '' && sub !== 'index')
          t.fail(`lib/${name} imports ${target}/${sub}: ${room} may import ${target}'s index only`);
      }
    }
  }
  t.ok(checked > 50, `${checked} imports across rooms checked`);
  t.end();
});

// Sub-rooms (docs/design.md "Rooms", one table per big room).
test('every sub-room is one level deep and states which siblings it may import', (t) => {
  let rooms = 0;
  for (const room of ROOMS) {
    const subs = subRooms(room);
    if (subs.length > 0) rooms++;
    for (const sub of subs) {
      t.ok(mayImport(path.join(LIB, room, sub), subs), `lib/${room}/${sub}/index.ts has a "May import:" line`);
      const nested = fs
        .readdirSync(path.join(LIB, room, sub))
        .filter((f) => fs.statSync(path.join(LIB, room, sub, f)).isDirectory());
      t.deepEqual(nested, [], `lib/${room}/${sub}: no folder inside a sub-room`);
    }
  }
  t.ok(rooms >= 1, `${rooms} rooms with sub-rooms`);
  t.end();
});

test('every import inside a room keeps the sub-room rule', (t) => {
  let checked = 0;
  for (const room of ROOMS) {
    const subs = subRooms(room);
    if (subs.length === 0) continue;
    const top = fs
      .readdirSync(path.join(LIB, room))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => f.slice(0, -3));
    for (const sub of subs) {
      const { allowed, indexOnly } = mayImport(path.join(LIB, room, sub), subs) ?? {
        allowed: new Set(),
        indexOnly: new Set(),
      };
      for (const name of fs.readdirSync(path.join(LIB, room, sub)).filter((f) => f.endsWith('.ts'))) {
        const where = `lib/${room}/${sub}/${name}`;
        for (const spec of imports(path.join(LIB, room, sub, name))) {
          if (spec.startsWith('./') || spec.startsWith('../../')) continue; // its own sub-room; other rooms: the test above
          checked++;
          const [target, ...rest] = spec.slice(3).split('/');
          const file = rest.join('/');
          if (spec === '..' || spec === '../' || top.includes(target))
            t.fail(`${where} imports ${spec}: a sub-room never imports the room's top-level files`);
          else if (!subs.includes(target)) t.fail(`${where} imports ${spec}: not a sub-room of ${room}`);
          else if (!allowed.has(target))
            t.fail(`${where} imports ${spec}: ${sub} may import ${[...allowed].join(', ') || 'no sibling'}`);
          else if (indexOnly.has(target) && file !== '' && file !== 'index')
            t.fail(`${where} imports ${spec}: ${sub} may import ${target}'s index only`);
        }
      }
    }
  }
  t.ok(checked > 10, `${checked} imports between sub-rooms checked`);
  t.end();
});

test('lib/ imports its own files by relative paths', (t) => {
  for (const name of tsFiles(LIB)) {
    const text = fs.readFileSync(path.join(LIB, name), 'utf8');
    for (const m of text.matchAll(/\bfrom\s+'((?:pjrt-score|lib\/|src\/|@\/|\/)[^']*)'/g))
      t.fail(`lib/${name} imports '${m[1]}': our own files by relative path`);
  }
  t.pass('no import of our own files by package name or absolute path');
  t.end();
});

// Small modules (docs/design.md "Rooms"): no TypeScript file of lib/ over 400 lines.
const MAX_LINES = 400;
/** The file an import of `from` (relative to lib/) names, relative to lib/: `x.ts` or `x/index.ts`; null where neither exists. */
function resolveImport(from, spec) {
  const base = path.join(path.dirname(path.join(LIB, from)), spec);
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')])
    if (fs.existsSync(candidate)) return path.relative(LIB, candidate);
  return null;
}

test('no import circle between files of lib/ (type-only imports counted)', (t) => {
  const files = tsFiles(LIB);
  const edges = new Map(
    files.map((f) => [
      f,
      imports(path.join(LIB, f))
        .map((spec) => resolveImport(f, spec))
        .filter((x) => x !== null),
    ]),
  );
  // Depth-first, each file's state: 1 on the path being walked, 2 done; a path back to a file on it is a circle.
  const state = new Map();
  const circles = [];
  const walk = (file, trail) => {
    state.set(file, 1);
    for (const next of edges.get(file) ?? []) {
      if (state.get(next) === 1) circles.push([...trail.slice(trail.indexOf(next)), next].join(' -> '));
      else if (!state.has(next)) walk(next, [...trail, next]);
    }
    state.set(file, 2);
  };
  for (const f of files) if (!state.has(f)) walk(f, [f]);
  t.deepEqual(circles, [], `no circle among ${files.length} files`);
  t.end();
});

test(`no file in lib/ over ${MAX_LINES} lines`, (t) => {
  const files = tsFiles(LIB);
  for (const name of files) {
    const lines = fs.readFileSync(path.join(LIB, name), 'utf8').split('\n').length - 1;
    if (lines > MAX_LINES) t.fail(`lib/${name}: ${lines} lines`);
  }
  t.ok(files.length > 100, `${files.length} files read`);
  t.end();
});

test('the sub-room rule reads what it says (scoring and its sub-rooms)', (t) => {
  const subs = subRooms('scoring');
  t.deepEqual(subs.sort(), ['execution', 'planning', 'platform', 'requests'], 'scoring: four sub-rooms');
  t.deepEqual([...mayImport(path.join(LIB, 'scoring', 'requests'), subs).allowed], [], 'requests: no sibling');
  t.deepEqual([...mayImport(path.join(LIB, 'scoring', 'planning'), subs).allowed], ['platform'], 'planning: platform');
  t.deepEqual(
    [...mayImport(path.join(LIB, 'scoring', 'execution'), subs).allowed].sort(),
    ['planning', 'platform', 'requests'],
    'execution: requests, planning, platform',
  );
  t.deepEqual([...mayImport(path.join(LIB, 'scoring', 'platform'), subs).allowed], [], 'platform: no sibling');
  t.end();
});

test('the rule reads what it says (a known room and its rule)', (t) => {
  const server = rule('server');
  t.deepEqual([...server.allowed].sort(), ['scoring', 'util', 'wire'], 'server: wire, scoring and util, not cli');
  t.deepEqual([...server.indexOnly], ['scoring'], "server: scoring's index only");
  // The wire formats (docs/design.md "Rooms"): below server and cli, above scoring, whose index only they read.
  const wire = rule('wire');
  t.deepEqual([...wire.allowed].sort(), ['scoring', 'util'], 'wire: scoring and util');
  t.deepEqual([...wire.indexOnly], ['scoring'], "wire: scoring's index only");
  t.ok(rule('cli').allowed.has('wire'), 'cli may import wire');
  for (const room of ROOMS.filter((r) => r !== 'server' && r !== 'cli'))
    t.notOk(rule(room).allowed.has('wire'), `${room} may not import wire`);
  t.deepEqual([...rule('util').allowed], [], 'util: nothing');
  const integrations = rule('integrations');
  t.deepEqual([...integrations.allowed].sort(), ['scoring', 'util'], 'integrations: scoring and util');
  t.deepEqual([...integrations.indexOnly], ['scoring'], "integrations: scoring's index only");
  t.end();
});

// native/ has rooms of its own (native/README.md: a table of room, what it
// holds, what it may include). Every #include of ours names its room
// ("room/file.h", from the include root native/), and keeps the room's rule;
// only binding/ includes Node-API.
const NATIVE = path.join(__dirname, '..', 'native');

function nativeRules() {
  const text = fs.readFileSync(path.join(NATIVE, 'README.md'), 'utf8');
  const rules = new Map();
  for (const m of text.matchAll(/^\| ([a-z]+) \| [^|]+ \| ([^|]+) \|$/gm)) {
    if (m[1] === 'room') continue;
    rules.set(
      m[1],
      new Set(
        m[2]
          .split(',')
          .map((s) => s.trim())
          .filter((s) => /^[a-z]+$/.test(s)),
      ),
    );
  }
  return rules;
}

test('native/: every file is in a room that native/README.md names', (t) => {
  const rules = nativeRules();
  t.deepEqual([...rules.keys()].sort(), ['binding', 'kernels', 'runtime'], 'three rooms: binding, kernels, runtime');
  const loose = fs.readdirSync(NATIVE).filter((f) => /\.(h|cc)$/.test(f));
  t.deepEqual(loose, [], 'no source file outside a room');
  const folders = fs.readdirSync(NATIVE).filter((f) => fs.statSync(path.join(NATIVE, f)).isDirectory());
  t.deepEqual(folders.sort(), [...rules.keys()].sort(), 'every folder is a room of the table');
  t.end();
});

test("native/: every include keeps its room's rule, and only binding/ includes Node-API", (t) => {
  const rules = nativeRules();
  let checked = 0;
  for (const [room, allowed] of rules) {
    for (const name of fs.readdirSync(path.join(NATIVE, room)).filter((f) => /\.(h|cc)$/.test(f))) {
      const text = fs.readFileSync(path.join(NATIVE, room, name), 'utf8');
      for (const m of text.matchAll(/^#include ([<"])([^>"]+)[>"]/gm)) {
        const [, kind, target] = m;
        if (target === 'napi.h' && room !== 'binding')
          t.fail(`native/${room}/${name} includes napi.h: only binding/ may`);
        if (kind !== '"') continue;
        checked++;
        const [dir, file] = target.split('/');
        if (!file || !fs.existsSync(path.join(NATIVE, target))) {
          t.fail(`native/${room}/${name} includes "${target}": ours are included as "room/file.h" from native/`);
        } else if (dir !== room && !allowed.has(dir)) {
          t.fail(
            `native/${room}/${name} includes "${target}": ${room} may include ${[...allowed].join(', ') || 'nothing of ours'}`,
          );
        }
      }
    }
  }
  t.ok(checked > 50, `${checked} includes of ours checked`);
  t.end();
});
