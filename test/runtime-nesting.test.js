'use strict';
// Deeply nested program text: compile() refuses it with a clear error before
// the plugin's recursive parser sees it (the addon checks again, and parses
// on a large stack), so the process survives. Each deep case runs in a child
// process, which must exit normally (a stack overflow is a SIGSEGV).
const test = require('tape');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { MAX_PROGRAM_NESTING, programNestingDepth } = require('../dist/runtime');
const { prng } = require('./helpers/prng');

const ROOT = path.join(__dirname, '..');

// Runs `body` (an async function body with `Client` in scope) in a fresh Node
// process; returns its exit status and the JSON it printed last.
function inChild(body) {
  const script = `const { Client } = require(${JSON.stringify(ROOT)});
(async () => { ${body} })().then((r) => console.log(JSON.stringify(r)), (e) => { console.error(e); process.exit(3); });`;
  const child = spawnSync(process.execPath, ['-e', script], {
    encoding: 'utf8',
    timeout: 240_000,
    maxBuffer: 64 << 20,
  });
  const lines = (child.stdout || '').trim().split('\n');
  let result;
  try {
    result = JSON.parse(lines[lines.length - 1]);
  } catch {
    result = null;
  }
  return { status: child.status, signal: child.signal, result, stderr: (child.stderr || '').slice(-2000) };
}

// The program from the issue report: 'func.func @main() {' n times.
const nestedFuncs = (n) => `'func.func @main() {'.repeat(${n})`;

test('5,000, 50,000 and 1,000,000 nested regions: a clear error each, and the child exits normally', (t) => {
  const { status, signal, result, stderr } = inChild(`
    const client = await Client.create();
    const out = [];
    for (const n of [5000, 50000, 1000000]) {
      try { await client.compile(${nestedFuncs('n')}); out.push({ n, ok: true }); }
      catch (e) { out.push({ n, name: e.name, code: e.code, message: e.message }); }
    }
    client.dispose();
    return out;`);
  t.equal(signal, null, 'no signal (no stack overflow)');
  t.equal(status, 0, `child exit status 0${status ? `; stderr: ${stderr}` : ''}`);
  t.equal(result && result.length, 3, 'three results');
  for (const r of result || []) {
    t.notOk(r.ok, `${r.n} levels: rejected`);
    t.equal(r.code, 'INVALID_ARGUMENT', `${r.n} levels: code INVALID_ARGUMENT`);
    t.match(
      r.message,
      new RegExp(`nests more than ${MAX_PROGRAM_NESTING} levels deep`),
      `${r.n} levels: "${r.message}"`,
    );
  }
  t.end();
});

test('the addon refuses the same programs when called directly (no TypeScript check)', (t) => {
  const { status, signal, result, stderr } = inChild(`
    const client = await Client.create();
    const out = [];
    for (const n of [5000, 50000, 1000000]) {
      try { await client.native.compile(${nestedFuncs('n')}); out.push({ n, ok: true }); }
      catch (e) { out.push({ n, code: e.code, message: e.message }); }
    }
    client.dispose();
    return out;`);
  t.equal(signal, null, 'no signal');
  t.equal(status, 0, `child exit status 0${status ? `; stderr: ${stderr}` : ''}`);
  for (const r of result || []) {
    t.equal(r.code, 'INVALID_ARGUMENT', `${r.n} levels, raw binding: code INVALID_ARGUMENT`);
    t.match(r.message, /nests deeper than 1000 levels/, `${r.n} levels, raw binding: "${r.message}"`);
  }
  t.end();
});

test('a program exactly at the limit reaches the plugin parser and fails cleanly', (t) => {
  // func.func @main() { is 1 level, each nested "({" 2 more, and a final "(" the last one.
  const levels = (MAX_PROGRAM_NESTING - 2) / 2;
  const text = 'func.func @main() {\n' + '"stablehlo.case"() ({\n'.repeat(levels) + '"stablehlo.case"() (';
  t.equal(programNestingDepth(text), MAX_PROGRAM_NESTING, 'the text is exactly at the limit');
  const { status, signal, result, stderr } = inChild(`
    const text = ${JSON.stringify(text)};
    const client = await Client.create();
    const out = [];
    for (const [name, run] of [['public', (s) => client.compile(s)], ['raw', (s) => client.native.compile(s)]]) {
      try { await run(text); out.push({ name, ok: true }); }
      catch (e) { out.push({ name, code: e.code, message: e.message }); }
    }
    client.dispose();
    return out;`);
  t.equal(signal, null, 'no signal');
  t.equal(status, 0, `child exit status 0${status ? `; stderr: ${stderr}` : ''}`);
  for (const r of result || []) {
    t.notOk(r.ok, `${r.name}: not compiled (unterminated)`);
    t.doesNotMatch(r.message, /nests/, `${r.name}: not refused by the nesting check`);
    t.match(r.message, /error/i, `${r.name}: the parser's error: "${String(r.message).split('\n')[0].slice(0, 120)}"`);
  }
  t.end();
});

test('programNestingDepth: the depth of text built with a known depth', (t) => {
  const random = prng(15).next;
  const pairs = ['()', '[]', '{}', '<>'];
  // Noise that must not count: strings with brackets and escaped quotes, comments, arrows.
  const noise = ['"(((\\"[[["', '// <<<{{{\n', ' -> ', 'x', ' ', '"}}}"'];
  for (let trial = 0; trial < 200; trial++) {
    const target = 1 + Math.floor(random() * 60);
    // One spine of depth `target`, with random shallower branches around it.
    const build = (depth) => {
      if (depth === 0) return noise[Math.floor(random() * noise.length)];
      const [open, close] = pairs[Math.floor(random() * pairs.length)];
      const side = random() < 0.3 ? build(Math.floor(random() * depth)) : '';
      return open + side + build(depth - 1) + noise[Math.floor(random() * noise.length)] + close;
    };
    const text = build(target);
    if (programNestingDepth(text) !== target) {
      t.fail(`depth ${programNestingDepth(text)} for a text built ${target} deep: ${text}`);
      return t.end();
    }
  }
  t.pass('200 random texts: the computed depth equals the depth they were built with');
  t.equal(programNestingDepth('('.repeat(1_000_000)), MAX_PROGRAM_NESTING + 1, 'counting stops past the limit');
  t.end();
});
