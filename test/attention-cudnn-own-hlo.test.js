'use strict';
// The cuDNN prefix form with the own keys in StableHLO (lib/hlo/attention/cudnn-forms.ts,
// `{ kind: 'cudnn', ownKeys: 'hlo' }`, tags cudnn_ownhlo / cudnnsim_ownhlo;
// docs/gpu.md "Fused attention through cuDNN"),
// without a GPU:
// - tags and validation at the public edge (the option only on prefix attention);
// - on the real CPU plugin, the form with the prefix part on the stand-in against
//   the joint form and a float64 joint softmax over [prefix ; own keys], within 1e-5:
//   items shorter than the bucket, a prefix of length 0, grouped (cross-request) inputs;
// - under bf16 dots, the own part's dots take bf16 operands;
// - the pinned program: exactly one __cudnn$fmhaSoftmax call per items-over-prefix
//   step (the default cuDNN form: two), the call field for field as JAX 0.11.2
//   lowers the padding call (test/fixtures/jax-cudnn-0.11.2.txt).
const test = require('tape');
const { Client } = require('../dist/runtime');
const {
  buildProgram,
  TensorType,
  itemsOverPrefix,
  parsePrefixAttentionTag,
  prefixAttentionTag,
  parseCausalAttentionTag,
  causalPrefix,
} = require('../dist/hlo');
const { checkPrefixAttention } = require('../dist/hlo');
const { runProgram } = require('./helpers/run-program');
const { makeInputs, reference, joinInputs } = require('./helpers/prefix-forms');
const { parseCall, fixtureCases } = require('./helpers/cudnn-fixture');

const TOL = 1e-5;
const FMHA = '__cudnn$fmhaSoftmax';
const OWN_HLO_SIM = parsePrefixAttentionTag('cudnnsim_ownhlo');
/** The StableHLO own-keys form, prefix part on the stand-in. */
const OWN_FORMS = [['ownhlo', OWN_HLO_SIM]];

/** The items-over-prefix parameters with lead dims `lead` ([] or [G]). */
function params(f, lead, { P, N, L, Hq, Hkv, D }, type = 'f32') {
  const t = (dims) => new TensorType(type, [...lead, ...dims]);
  return {
    itemQ: f.param(t([N, L, Hq, D]), 'itemQ'),
    itemK: f.param(t([N, L, Hkv, D]), 'itemK'),
    itemV: f.param(t([N, L, Hkv, D]), 'itemV'),
    itemLengths: f.param(TensorType.s32([...lead, N]), 'itemLengths'),
    prefixK: f.param(t([P, Hkv, D]), 'prefixK'),
    prefixV: f.param(t([P, Hkv, D]), 'prefixV'),
    prefixLength: f.param(TensorType.s32(lead), 'prefixLength'),
  };
}

const maxDiff = (a, b) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);

test('tags and checks: cudnn_ownhlo and cudnnsim_ownhlo round-trip; ownKeys is checked and only for prefix attention', async (t) => {
  t.deepEqual(
    parsePrefixAttentionTag('cudnn_ownhlo'),
    { kind: 'cudnn', standIn: false, ownKeys: 'hlo' },
    'cudnn_ownhlo',
  );
  t.deepEqual(OWN_HLO_SIM, { kind: 'cudnn', standIn: true, ownKeys: 'hlo' }, 'cudnnsim_ownhlo');
  t.deepEqual(
    parsePrefixAttentionTag('cudnn_ownhlo_join'),
    { kind: 'cudnn', standIn: false, ownKeys: 'hlo', joinPrefill: true },
    'cudnn_ownhlo_join',
  );
  for (const tag of ['cudnn', 'cudnnsim', 'cudnn_ownhlo', 'cudnnsim_ownhlo', 'cudnn_join', 'cudnnsim_ownhlo_join'])
    t.equal(prefixAttentionTag(parsePrefixAttentionTag(tag)), tag, `${tag} round-trips`);
  t.equal(
    prefixAttentionTag({ kind: 'cudnn', ownKeys: 'cudnn' }),
    'cudnn',
    "ownKeys 'cudnn' is the default form's tag",
  );
  t.throws(
    () => parsePrefixAttentionTag('cudnn_ownxla'),
    /_ownhlo/,
    'an unknown suffix is refused, naming the known one',
  );
  t.throws(
    () => checkPrefixAttention({ kind: 'cudnn', ownKeys: 'xla' }),
    /ownKeys must be 'cudnn', 'hlo', got "xla"/,
    'an unknown ownKeys is refused',
  );
  t.throws(() => parseCausalAttentionTag('cudnn_ownhlo'), /not square/, 'the causal tags have no _ownhlo');
  t.throws(
    () =>
      buildProgram('cudnn_causal_own', (f) => {
        const q = f.param(TensorType.f32([4, 2, 8]), 'q');
        const k = f.param(TensorType.f32([4, 1, 8]), 'k');
        return {
          out: causalPrefix(f, q, k, k, f.param(TensorType.s32([]), 'n'), {
            kind: 'cudnn',
            standIn: true,
            ownKeys: 'hlo',
          }),
        };
      }),
    /ownKeys applies to prefix attention/,
    'ownKeys on the causal prefill is refused',
  );
  const { Scorer } = require('../dist/scoring/scorer');
  await Scorer.load({ model: '/nonexistent-model', prefixAttention: { kind: 'cudnn', ownKeys: 'cuda' } }).then(
    (s) => {
      s.dispose();
      t.fail('loaded');
    },
    (err) =>
      t.ok(
        err instanceof TypeError && /ownKeys must be/.test(err.message),
        `Scorer.load refuses it with a TypeError before loading: ${err.message}`,
      ),
  );
});

let client;
test('setup: CPU client', async (t) => {
  client = await Client.create();
  t.ok(client, 'created');
});

test('own keys in StableHLO (with dots, without), prefix part on the stand-in: = the joint form and the float64 joint softmax, within 1e-5', async (t) => {
  const cases = [
    {
      name: 'items shorter than the bucket, GQA 3',
      P: 24,
      N: 3,
      L: 5,
      Hq: 3,
      Hkv: 1,
      D: 32,
      prefixLength: 19,
      itemLengths: [5, 2, 0],
    },
    { name: 'prefix of length 0', P: 8, N: 2, L: 4, Hq: 4, Hkv: 2, D: 16, prefixLength: 0, itemLengths: [4, 3] },
    { name: 'L=1, all keys valid', P: 9, N: 3, L: 1, Hq: 2, Hkv: 2, D: 8, prefixLength: 9, itemLengths: [1, 1, 0] },
  ];
  for (const [i, c0] of cases.entries())
    for (const [tag, form] of OWN_FORMS) {
      const c = { ...c0, name: `${tag}, ${c0.name}` };
      const inputs = makeInputs(300 + i, c);
      const prog = buildProgram(`items_over_prefix_${tag}`, (f) => {
        const x = params(f, [], c);
        return { own: itemsOverPrefix(f, x, form), joint: itemsOverPrefix(f, x, { kind: 'joint' }) };
      });
      const [got, joint] = await runProgram(client, prog, inputs);
      const want = reference(c, inputs);
      t.ok(maxDiff(got, want) <= TOL, `${c.name}: max |diff| ${maxDiff(got, want).toExponential(2)} against float64`);
      t.ok(maxDiff(got, joint) <= TOL, `${c.name}: and ${maxDiff(got, joint).toExponential(2)} against the joint form`);
      const row = c.Hq * c.D;
      let padding = 0;
      c.itemLengths.forEach((len, n) => {
        for (let j = len * row; j < c.L * row; j++) padding = Math.max(padding, Math.abs(got[n * c.L * row + j]));
      });
      t.equal(padding, 0, `${c.name}: padding item tokens are exactly 0`);
    }
});

test('own keys in StableHLO (with dots, without), grouped (cross-request): each group = the reference alone and the joint form, within 1e-5', async (t) => {
  const c = { P: 12, N: 3, L: 4, Hq: 4, Hkv: 2, D: 8 };
  const groups = [
    { ...c, prefixLength: 10, itemLengths: [4, 1, 3] },
    { ...c, prefixLength: 0, itemLengths: [2, 4, 0] },
    { ...c, prefixLength: 12, itemLengths: [3, 3, 4] },
  ];
  const G = groups.length;
  const inputs = groups.map((gc, i) => makeInputs(320 + i, gc));
  const joined = (k) => joinInputs(inputs, k);
  for (const [tag, form] of OWN_FORMS) {
    const prog = buildProgram(`items_over_prefix_${tag}_grouped`, (f) => {
      const x = params(f, [G], c);
      return { own: itemsOverPrefix(f, x, form), joint: itemsOverPrefix(f, x, { kind: 'joint' }) };
    });
    const [got, joint] = await runProgram(client, prog, [0, 1, 2, 3, 4, 5, 6].map(joined));
    const size = c.N * c.L * c.Hq * c.D;
    groups.forEach((gc, gi) => {
      const part = got.subarray(gi * size, (gi + 1) * size);
      const want = reference(gc, inputs[gi]);
      t.ok(
        maxDiff(part, want) <= TOL,
        `${tag}, group ${gi} (prefix ${gc.prefixLength}): max |diff| ${maxDiff(part, want).toExponential(2)} against float64`,
      );
      const jointPart = joint.subarray(gi * size, (gi + 1) * size);
      t.ok(
        maxDiff(part, jointPart) <= TOL,
        `${tag}, group ${gi}: and ${maxDiff(part, jointPart).toExponential(2)} against the joint form`,
      );
    });
  }
});

test("under bf16 dots the own part's dots round their operands to bf16 (the function's dot precision)", (t) => {
  const c = { P: 8, N: 2, L: 4, Hq: 4, Hkv: 2, D: 16 };
  const prog = buildProgram(
    'items_over_prefix_own_hlo_bf16',
    (f) => ({ out: itemsOverPrefix(f, params(f, [], c), OWN_HLO_SIM) }),
    { dotOperands: 'bf16' },
  );
  const dots = prog.text.split('\n').filter((l) => l.includes('stablehlo.dot_general'));
  t.equal(dots.length, 4, 'four dots: q.k and p.v of the prefix part (stand-in) and of the own part');
  t.ok(
    dots.every((l) => /: \(tensor<[0-9x]+xbf16>, tensor<[0-9x]+xbf16>\) -> tensor<[0-9x]+xf32>/.test(l)),
    'every dot takes bf16 operands and gives f32',
  );
  t.end();
});

test('the pinned program: one cuDNN call per items-over-prefix step, field for field the padding call JAX 0.11.2 lowers', (t) => {
  // JAX's grouped padded prefix call: q 4x160x16x128 over 4x384x8x128, i.e. 4 groups of 8 items of 20 tokens.
  const jax = fixtureCases().find((x) => x.name === 'qwen3-grouped-prefix-padded training');
  t.ok(jax, 'the fixture has the grouped padded training call');
  const c = { P: jax.tk, N: 8, L: jax.tq / 8, Hq: jax.hq, Hkv: jax.hkv, D: jax.d };
  const build = (form, steps) =>
    buildProgram('items_over_prefix_cudnn_pinned', (f) => {
      const x = params(f, [jax.b], c);
      const outs = {};
      let itemQ = x.itemQ;
      for (let s = 0; s < steps; s++) {
        outs[`out${s}`] = itemsOverPrefix(f, { ...x, itemQ }, form);
        itemQ = f.add(itemQ, outs[`out${s}`]);
      }
      return outs;
    });
  const count = (text) =>
    text.split('\n').filter((l) => l.includes('stablehlo.custom_call') && l.includes(FMHA)).length;
  const own = { kind: 'cudnn', pluginVersion: '0.11.2', ownKeys: 'hlo' };
  for (const steps of [1, 2]) {
    t.equal(count(build(own, steps).text), steps, `ownKeys 'hlo': ${steps} step(s), ${steps} call(s)`);
    t.equal(
      count(build({ kind: 'cudnn', pluginVersion: '0.11.2' }, steps).text),
      2 * steps,
      `the default cuDNN form: ${2 * steps} calls`,
    );
  }
  const line = build(own, 1)
    .text.split('\n')
    .find((l) => l.includes(FMHA));
  const ours = parseCall(line);
  const theirs = parseCall(jax.line);
  for (const field of ['target', 'apiVersion', 'configText', 'operandLayouts', 'resultLayouts'])
    t.equal(ours[field], theirs[field], `${field} as JAX's`);
  t.deepEqual(ours.config, theirs.config, "backend_config field for field as JAX's");
  t.deepEqual(ours.operandTypes, theirs.operandTypes, "operand types as JAX's");
  t.deepEqual(ours.resultTypes, theirs.resultTypes, "result types as JAX's");
  t.throws(
    () => build({ ...own, pluginVersion: '0.12.0' }, 1),
    /pinned to jax-cuda13-pjrt 0\.11\.2/,
    'the pin still holds',
  );
  t.end();
});

test('teardown', (t) => {
  client.dispose();
  t.end();
});
