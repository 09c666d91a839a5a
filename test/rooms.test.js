'use strict';
// Each room's index.ts says which rooms its files may import ("May import:
// ..."; docs/design.md "Rooms"). This reads every import of lib/<room>/*.ts
// and holds it to that line: a room named there may be imported, and where
// the line says "its index only", only through that room's index.
const test = require('tape');
const fs = require('node:fs');
const path = require('node:path');

const LIB = path.join(__dirname, '..', 'lib');
const ROOMS = fs.readdirSync(LIB).filter((name) => fs.statSync(path.join(LIB, name)).isDirectory());

/** { allowed: Set, indexOnly: Set } from the index's "May import:" sentence. */
function rule(room) {
  const text = fs.readFileSync(path.join(LIB, room, 'index.ts'), 'utf8');
  const match = /May import:([\s\S]*?)(?:\*\/|\n \*\s*\n)/.exec(text);
  if (!match) return null;
  const sentence = match[1].replace(/\n \*/g, ' ');
  const allowed = new Set();
  const indexOnly = new Set();
  // "room (note), room, and room (note)": the notes say what of the room, or which rooms are not allowed.
  for (const part of sentence.split(/,|\band\b/)) {
    const m = /^\s*([a-z-]+)(?:\s+only)?\s*(\(([^)]*)\))?/.exec(part);
    if (!m || !ROOMS.includes(m[1])) continue;
    allowed.add(m[1]);
    if (m[3] && /index only/.test(m[3])) indexOnly.add(m[1]);
  }
  return { allowed, indexOnly };
}

/** Every room-crossing import of a file: [room, subpath] ('' for the room's index). */
function crossings(file) {
  const text = fs.readFileSync(file, 'utf8');
  const out = [];
  for (const m of text.matchAll(/(?:from\s+|require\(|import\()\s*'\.\.\/([a-z-]+)(\/[a-z-]+)?'/g)) out.push([m[1], m[2] ? m[2].slice(1) : '']);
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
    for (const name of fs.readdirSync(path.join(LIB, room)).filter((f) => f.endsWith('.ts'))) {
      for (const [target, sub] of crossings(path.join(LIB, room, name))) {
        checked++;
        if (!allowed.has(target)) t.fail(`lib/${room}/${name} imports ../${target}${sub ? `/${sub}` : ''}: ${room} may import ${[...allowed].join(', ') || 'nothing in lib/'}`);
        else if (indexOnly.has(target) && sub !== '' && sub !== 'index') t.fail(`lib/${room}/${name} imports ../${target}/${sub}: ${room} may import ${target}'s index only`);
      }
    }
  }
  t.ok(checked > 50, `${checked} imports across rooms checked`);
  t.end();
});

test('the rule reads what it says (a known room and its rule)', (t) => {
  const server = rule('server');
  t.deepEqual([...server.allowed].sort(), ['scoring', 'util'], 'server: scoring and util, not cli');
  t.deepEqual([...server.indexOnly], ['scoring'], "server: scoring's index only");
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
    rules.set(m[1], new Set(m[2].split(',').map((s) => s.trim()).filter((s) => /^[a-z]+$/.test(s))));
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

test('native/: every include keeps its room\'s rule, and only binding/ includes Node-API', (t) => {
  const rules = nativeRules();
  let checked = 0;
  for (const [room, allowed] of rules) {
    for (const name of fs.readdirSync(path.join(NATIVE, room)).filter((f) => /\.(h|cc)$/.test(f))) {
      const text = fs.readFileSync(path.join(NATIVE, room, name), 'utf8');
      for (const m of text.matchAll(/^#include ([<"])([^>"]+)[>"]/gm)) {
        const [, kind, target] = m;
        if (target === 'napi.h' && room !== 'binding') t.fail(`native/${room}/${name} includes napi.h: only binding/ may`);
        if (kind !== '"') continue;
        checked++;
        const [dir, file] = target.split('/');
        if (!file || !fs.existsSync(path.join(NATIVE, target))) {
          t.fail(`native/${room}/${name} includes "${target}": ours are included as "room/file.h" from native/`);
        } else if (dir !== room && !allowed.has(dir)) {
          t.fail(`native/${room}/${name} includes "${target}": ${room} may include ${[...allowed].join(', ') || 'nothing of ours'}`);
        }
      }
    }
  }
  t.ok(checked > 50, `${checked} includes of ours checked`);
  t.end();
});
