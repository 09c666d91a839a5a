'use strict';
// Per-compile XLA options (docs/gpu.md, 'XLA options'): Client.compile's
// xlaOptions reach XLA on the real CPU plugin (a dump directory fills only
// with them; XLA's own error for a value of the wrong type echoes what it
// decoded, which checks the addon's protobuf encoding of ints and doubles),
// an unknown option is the plugin's error and nothing aborts, bad arguments
// are TypeErrors at both edges (Client.compile and the addon), the options
// take part in the JIT cache's namespace, PJRT_SCORE_PLATFORM_FACTS may set
// them, and a Scorer compiles every program with them and says so.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client, PjrtError, Scorer } = require('..');
const { executableNamespace } = require('../dist/scoring/execution/compiler');
const { platformFacts } = require('../dist/scoring/platform');
const { platformFactsOverride, withOverride } = require('../dist/scoring/platform/override');
const { makeTinyModel, writeTinyGguf } = require('./helpers/tiny-model');

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-xla-options-'));

// A named module: XLA names the dump files after it.
const PROBE = `module @xla_options_probe {
  func.func @main(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %0 = stablehlo.multiply %a, %b : tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}`;

let client;
test('setup', async (t) => {
  client = await Client.create();
  t.pass('CPU client ready');
});

async function runProbe(exe) {
  const a = await client.upload(Float32Array.of(1, 2, 3, 4, 5, 6), [2, 3]);
  const b = await client.upload(Float32Array.of(2, 2, 2, 0.5, 0.5, 0.5), [2, 3]);
  const [out] = await exe.execute([a, b]);
  const host = Array.from(await out.toHost());
  for (const x of [a, b, out]) x.dispose();
  return host;
}

test('an override reaches XLA: xla_dump_to fills a directory with HLO text naming the module, and only with the option', async (t) => {
  const dumped = path.join(work, 'dumped');
  fs.mkdirSync(dumped);
  const without = await client.compile(PROBE);
  t.deepEqual(fs.readdirSync(dumped), [], 'without options: nothing written there');
  const exe = await client.compile(PROBE, { xlaOptions: { xla_dump_to: dumped, xla_dump_hlo_as_text: true } });
  const files = fs.existsSync(dumped) ? fs.readdirSync(dumped) : [];
  const texts = files.filter((f) => f.includes('xla_options_probe') && f.endsWith('.txt'));
  t.ok(
    texts.length > 0,
    `with them: HLO text files of the module (${texts.slice(0, 3).join(', ')}${texts.length > 3 ? ', ...' : ''})`,
  );
  const hlo = texts.map((f) => fs.readFileSync(path.join(dumped, f), 'utf8')).join('\n');
  t.ok(/HloModule xla_options_probe/.test(hlo) && /multiply/.test(hlo), 'the text is the module, with its multiply');
  // A plain JS product as reference: both executables compute it.
  const expected = [2, 4, 6, 2, 2.5, 3];
  t.deepEqual(await runProbe(exe), expected, 'the executable compiled with options runs');
  t.deepEqual(await runProbe(without), expected, 'and so does the one without');
  exe.dispose();
  without.dispose();
});

test('the encoding of numbers, as XLA decodes it: a bool option given a number echoes the number it read', async (t) => {
  // XLA refuses a number for a bool field, naming the value it decoded (an int64 varint or a double).
  const cases = [
    [-12345678901, /'-12345678901' is not a valid bool value/, 'a negative int64 (10-byte varint)'],
    [2 ** 53 - 1, /'9007199254740991' is not a valid bool value/, 'the largest safe integer'],
    [0.15625, /'0\.15625' is not a valid bool value/, 'a double (fixed64)'],
    [-1e300, /'-1e\+300' is not a valid bool value/, 'a large negative double'],
  ];
  for (const [value, pattern, label] of cases) {
    try {
      (await client.compile(PROBE, { xlaOptions: { xla_dump_hlo_as_text: value } })).dispose();
      t.fail(`${label}: should have been refused`);
    } catch (err) {
      t.ok(err instanceof PjrtError, `${label}: ${err.name}`);
      t.match(err.message, pattern, `${label}: ${err.message.split('\n')[0]}`);
    }
  }
});

test('an unknown option rejects with the plugin error naming it; the client still compiles and runs', async (t) => {
  try {
    (await client.compile(PROBE, { xlaOptions: { xla_no_such_option_at_all: true } })).dispose();
    t.fail('should have been refused');
  } catch (err) {
    t.ok(err instanceof PjrtError, `a ${err.name}`);
    t.match(err.message, /xla_no_such_option_at_all/, `it names the option: ${err.message.split('\n')[0]}`);
  }
  const exe = await client.compile(PROBE);
  t.deepEqual(await runProbe(exe), [2, 4, 6, 2, 2.5, 3], 'a compile afterwards runs');
  exe.dispose();
});

test('bad xlaOptions are TypeErrors from Client.compile, before the addon', async (t) => {
  const cases = [
    [{ dump_to: '/tmp' }, /option name 'dump_to' must match/, 'no xla_ prefix'],
    [{ XLA_DUMP_TO: '/tmp' }, /option name 'XLA_DUMP_TO' must match/, 'upper case'],
    [{ xla_dump_max_hlo_modules: NaN }, /xla_dump_max_hlo_modules must be a finite number, got NaN/, 'NaN'],
    [{ xla_dump_max_hlo_modules: Infinity }, /must be a finite number, got Infinity/, 'Infinity'],
    [
      { xla_dump_to: { dir: '/tmp' } },
      /xla_dump_to must be a boolean, number or string, got object/,
      'an object value',
    ],
    [{ xla_dump_to: null }, /got null/, 'null'],
    [{ xla_dump_to: '/tmp/a\0b' }, /xla_dump_to must not contain a NUL character/, 'a string with NUL'],
    [['xla_dump_to'], /must be an object/, 'an array'],
    ['xla_dump_to=/tmp', /must be an object/, 'a string'],
  ];
  for (const [xlaOptions, pattern, label] of cases) {
    try {
      (await client.compile(PROBE, { xlaOptions })).dispose();
      t.fail(`${label}: should have been refused`);
    } catch (err) {
      t.ok(err instanceof TypeError, `${label}: a TypeError`);
      t.match(err.message, /^compile\(\) xlaOptions/, `${label}: from the public edge: ${err.message}`);
      t.match(err.message, pattern, `${label}: says what is wrong`);
    }
  }
  try {
    await client.compile(PROBE, 'xla_dump_to');
    t.fail('options that are not an object: should have been refused');
  } catch (err) {
    t.ok(
      err instanceof TypeError && /options must be an object/.test(err.message),
      `options not an object: ${err.message}`,
    );
  }
});

test('the addon itself refuses bad options with a TypeError (nothing reaches the plugin, nothing aborts)', async (t) => {
  const cases = [
    [{ '': true }, /XLA option name '' must be non-empty \[a-z0-9_\]/, 'an empty name'],
    [{ 'xla-dump': true }, /must be non-empty \[a-z0-9_\]/, 'a dash'],
    [{ xla_Dump: true }, /must be non-empty \[a-z0-9_\]/, 'upper case'],
    [{ xla_dump_max_hlo_modules: NaN }, /must be a finite number/, 'NaN'],
    [{ xla_dump_max_hlo_modules: -Infinity }, /must be a finite number/, '-Infinity'],
    [{ xla_dump_to: 'a\0b' }, /must not contain NUL/, 'NUL in a string'],
    [{ xla_dump_to: {} }, /must be a boolean, number or string/, 'an object value'],
    [{ xla_dump_to: 10n }, /must be a boolean, number or string/, 'a bigint'],
    [['xla_dump_to'], /XLA options must be an object/, 'an array'],
    [42, /XLA options must be an object/, 'a number'],
  ];
  for (const [options, pattern, label] of cases) {
    t.throws(() => client.native.compile(PROBE, options), pattern, `${label}: throws`);
    try {
      client.native.compile(PROBE, options);
    } catch (err) {
      t.ok(err instanceof TypeError, `${label}: a TypeError`);
    }
  }
  // Absent, undefined and null are no options: the compile runs.
  for (const options of [undefined, null, {}]) {
    const exe = await client.native.compile(PROBE, options);
    t.equal(exe.numOutputs, 1, `${String(JSON.stringify(options))}: compiles`);
    exe.dispose();
  }
});

test('the options take part in the JIT namespace: other options, another namespace; the same in another order, the same', (t) => {
  const fake = { platformName: 'cpu', platformVersion: '0.0.1', devices: [{ kind: 'cpu' }] };
  const base = { hostCpuId: 'c0ffee', xlaFlags: '' };
  const none = executableNamespace(fake, base);
  const empty = executableNamespace(fake, { ...base, xlaOptions: {} });
  const a = executableNamespace(fake, {
    ...base,
    xlaOptions: { xla_allow_excess_precision: false, xla_dump_to: '/d' },
  });
  const b = executableNamespace(fake, {
    ...base,
    xlaOptions: { xla_dump_to: '/d', xla_allow_excess_precision: false },
  });
  const c = executableNamespace(fake, { ...base, xlaOptions: { xla_allow_excess_precision: true, xla_dump_to: '/d' } });
  const d = executableNamespace(fake, {
    ...base,
    xlaOptions: { xla_allow_excess_precision: 'false', xla_dump_to: '/d' },
  });
  t.equal(empty, none, 'no options and {} are the same namespace');
  t.equal(a, b, 'the same options in another key order: the same namespace');
  t.notEqual(a, none, 'options: another namespace than none');
  t.notEqual(a, c, 'another value: another namespace');
  t.notEqual(a, d, 'the string "false" is not the boolean false');
  t.end();
});

test("PJRT_SCORE_PLATFORM_FACTS may set xlaOptions (replacing the platform's) and refuses bad ones", (t) => {
  const env = (value) => ({ PJRT_SCORE_PLATFORM_FACTS: value });
  t.deepEqual(platformFacts('cpu').xlaOptions, {}, 'cpu: no options');
  t.deepEqual(platformFacts('cuda').xlaOptions, { xla_allow_excess_precision: false }, 'cuda: excess precision off');
  const off = platformFactsOverride(env('{"xlaOptions":{}}'));
  t.deepEqual(off, { xlaOptions: {} }, 'an empty object is accepted');
  const cuda = withOverride(platformFacts('cuda'), off);
  t.deepEqual(cuda.xlaOptions, {}, "and replaces the platform's options");
  t.deepEqual(cuda.overridden, ['xlaOptions'], 'overridden says so');
  const some = platformFactsOverride(env('{"xlaOptions":{"xla_allow_excess_precision":true,"xla_dump_to":"/d"}}'));
  t.deepEqual(
    some.xlaOptions,
    { xla_allow_excess_precision: true, xla_dump_to: '/d' },
    'options with values are accepted',
  );
  const bad = [
    ['{"xlaOptions":[]}', /xlaOptions must be an object/],
    ['{"xlaOptions":"xla_dump_to=/d"}', /xlaOptions must be an object/],
    ['{"xlaOptions":{"dump_to":"/d"}}', /option name 'dump_to' must match/],
    ['{"xlaOptions":{"xla_dump_to":null}}', /xlaOptions.xla_dump_to must be a boolean, number or string, got null/],
    ['{"xlaOptions":{"xla_dump_to":["/d"]}}', /got an array/],
  ];
  for (const [value, pattern] of bad) {
    t.throws(() => platformFactsOverride(env(value)), pattern, `${value}: refused`);
    t.throws(
      () => platformFactsOverride(env(value)),
      /^TypeError: PJRT_SCORE_PLATFORM_FACTS: xlaOptions must be/,
      `${value}: names the variable`,
    );
  }
  t.end();
});

test('a Scorer compiles every program with its xlaOptions and says so in the load log and explain()', async (t) => {
  const file = path.join(work, 'tiny.gguf');
  writeTinyGguf(makeTinyModel('qwen3', 23), file, { matrixType: 'F32', embeddingType: 'F32' });
  const request = { query: [5, 9, 11, 3], items: [[7, 8], [4]], labelTokenIds: [0, 5] };
  const dump = path.join(work, 'scorer-dump');
  const events = [];
  try {
    (await Scorer.load({ model: file, diskCache: false, xlaOptions: { dump_to: dump } })).dispose();
    t.fail('a bad option: should have been refused');
  } catch (err) {
    t.ok(
      err instanceof TypeError && /^xlaOptions: option name 'dump_to' must match/.test(err.message),
      `a bad option: refused at load (${err.message})`,
    );
  }
  const scorer = await Scorer.load({
    model: file,
    diskCache: false,
    prefixCacheBytes: 0,
    xlaOptions: { xla_dump_to: dump, xla_dump_hlo_as_text: true },
    log: (e) => events.push(e),
  });
  try {
    const loaded = events.find((e) => e.event === 'model_loaded');
    const want = { xla_dump_to: dump, xla_dump_hlo_as_text: true };
    t.deepEqual(loaded.xlaOptions, want, 'the load log names the options (cpu: the platform has none, so only these)');
    t.deepEqual(scorer.explain({ ...request, algorithm: 'packed' }).xlaOptions, want, 'explain() too');
    await scorer.score(request, { algorithm: 'packed' });
    const files = fs.readdirSync(dump).filter((f) => f.endsWith('.txt'));
    t.ok(
      files.some((f) => f.includes('decoder_fused')),
      `the decoder's program was compiled with them (${files.filter((f) => f.includes('decoder_fused')).length} files)`,
    );
  } finally {
    scorer.dispose();
  }
  const plain = [];
  const other = await Scorer.load({ model: file, diskCache: false, prefixCacheBytes: 0, log: (e) => plain.push(e) });
  t.notOk(
    'xlaOptions' in plain.find((e) => e.event === 'model_loaded'),
    'without options on cpu: the load log has no xlaOptions',
  );
  t.notOk('xlaOptions' in other.explain({ ...request, algorithm: 'packed' }), 'nor explain()');
  other.dispose();
});

test('teardown', (t) => {
  client.dispose();
  fs.rmSync(work, { recursive: true, force: true });
  t.end();
});
