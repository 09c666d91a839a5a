'use strict';
// cuDNN fused attention (lib/hlo/attention/cudnn-call.ts, cudnn-forms.ts),
// without a GPU:
// - the custom calls the builder emits against JAX 0.11.2's own lowering of
//   jax.nn.dot_product_attention(implementation='cudnn') for the same shapes
//   (test/fixtures/jax-cudnn-0.11.2.txt, written by
//   `python3.12 scripts/lab/gpu/jax_cudnn_reference.py --install > test/fixtures/jax-cudnn-0.11.2.txt`),
//   field by field: target, api version, backend_config, layouts, types;
// - the pin: another or an unknown plugin version is refused, naming 0.11.2;
// - on the real CPU plugin, the factored form on the StableHLO stand-in
//   (two parts merged by their log-sum-exp statistics) against a float64
//   joint softmax over [prefix ; own keys], and the stand-in's statistics
//   against a float64 log-sum-exp, within 1e-5.
const fs = require('node:fs');
const path = require('node:path');
const test = require('tape');
const { Client } = require('../dist/runtime');
const {
  buildProgram,
  TensorType,
  causalPrefix,
  parsePrefixAttentionTag,
  parseCausalAttentionTag,
} = require('../dist/hlo');
const { fusedAttention, CUDNN_PINNED_PLUGIN } = require('../dist/hlo');
const ref = require('./helpers/attention-reference');
const { runProgram } = require('./helpers/run-program');
const prefixForms = require('./helpers/prefix-forms');
const { parseCall, fixtureCases } = require('./helpers/cudnn-fixture');

const TOL = 1e-5;
const PINNED = { kind: 'cudnn', pluginVersion: '0.11.2' };

function emittedCall(c) {
  const prog = buildProgram('cudnn_call', (f) => {
    const q = f.param(new TensorType('bf16', [c.b, c.tq, c.hq, c.d]), 'q');
    const k = f.param(new TensorType('bf16', [c.b, c.tk, c.hkv, c.d]), 'k');
    const v = f.param(new TensorType('bf16', [c.b, c.tk, c.hkv, c.d]), 'v');
    const kvLengths =
      c.mask === 'padding' || c.mask === 'padding_causal' ? f.param(TensorType.s32([c.b]), 'kv_lengths') : undefined;
    const r = fusedAttention(f, { q, k, v, mask: c.mask, kvLengths, scale: 1 / Math.sqrt(c.d) }, PINNED, c.withStats);
    return r.stats ? { out: r.out, stats: r.stats } : { out: r.out };
  });
  return prog.text.split('\n').find((l) => l.includes('stablehlo.custom_call'));
}

test('the emitted cuDNN custom calls equal JAX 0.11.2 lowering field by field', (t) => {
  const cases = fixtureCases();
  t.equal(cases.length, 20, 'the fixture has 10 shapes, forward and training each');
  const joined = cases.filter((c) => c.mask === 'padding_causal' && c.tq > c.tk);
  t.ok(
    joined.some((c) => c.b === 1) && joined.some((c) => c.b > 1),
    'among them the padding-causal mask with more query rows than keys (the joined prefill), one query and a batch of them',
  );
  for (const c of cases) {
    const jax = parseCall(c.line);
    const ours = parseCall(emittedCall(c));
    t.equal(ours.target, jax.target, `${c.name}: target ${jax.target}`);
    t.equal(ours.apiVersion, jax.apiVersion, `${c.name}: api_version`);
    t.deepEqual(ours.config, jax.config, `${c.name}: backend_config fields`);
    t.equal(ours.configText, jax.configText, `${c.name}: backend_config text`);
    t.equal(ours.operandLayouts, jax.operandLayouts, `${c.name}: operand layouts`);
    t.equal(ours.resultLayouts, jax.resultLayouts, `${c.name}: result layouts`);
    t.deepEqual(ours.operandTypes, jax.operandTypes, `${c.name}: operand types`);
    t.deepEqual(ours.resultTypes, jax.resultTypes, `${c.name}: result types`);
  }
  t.end();
});

test('the joined prefill (cudnn_join): one padding-causal call for the prefill and the item rows, then the own keys; across requests too', (t) => {
  const { decoderFused } = require('../dist/hlo');
  const tiny = require('./helpers/tiny-model');
  const config = tiny.makeTinyModel('qwen3').config;
  const pinned = (tag) => ({ ...parsePrefixAttentionTag(tag), pluginVersion: '0.11.2' });
  const options = {
    dotOperands: 'bf16',
    prefixAttention: pinned('cudnn_join'),
    causalAttention: { ...parseCausalAttentionTag('cudnn'), pluginVersion: '0.11.2' },
  };
  const masks = (groups, opts = options) =>
    decoderFused(config, { groups, prefix: 16, items: 3, itemLength: 4, labels: 2 }, opts)
      .text.split('\n')
      .filter((l) => l.includes('__cudnn$fmhaSoftmax'))
      .map((l) => /mask_type\\22: \\22(\w+)\\22/.exec(l)[1])
      .sort();
  t.deepEqual(masks(1), ['CAUSAL', 'PADDING_CAUSAL'], 'one query: the joined call and the own keys');
  t.deepEqual(
    masks(2),
    ['CAUSAL', 'PADDING_CAUSAL'],
    'a cross-request pass: the same two calls, the groups their batch',
  );
  t.deepEqual(
    masks(2, { ...options, prefixAttention: pinned('cudnn') }),
    ['CAUSAL', 'CAUSAL', 'PADDING'],
    'without the join: prefill, prefix part and own keys apart',
  );
  t.throws(
    () =>
      decoderFused(
        config,
        { prefix: 16, items: 3, itemLength: 4, labels: 2 },
        { ...options, causalAttention: parseCausalAttentionTag('square') },
      ),
    /takes the prefill into its cuDNN call, so the causal form must be cudnn too/,
    'the join with a prefill form other than cuDNN is refused',
  );
  t.throws(
    () => parseCausalAttentionTag('cudnn_join'),
    /joinPrefill applies to prefix attention|not square/,
    'the causal tags have no _join',
  );
  t.end();
});

test('the pin: another or an unknown plugin version is refused, naming the pinned one', (t) => {
  const c = fixtureCases()[0];
  for (const pluginVersion of ['0.12.0', undefined]) {
    t.throws(
      () =>
        buildProgram('cudnn_refused', (f) => {
          const q = f.param(TensorType.f32([1, 8, 2, 64]), 'q');
          const k = f.param(TensorType.f32([1, 8, 1, 64]), 'k');
          return {
            out: fusedAttention(f, { q, k, v: k, mask: 'none', scale: 0.125 }, { kind: 'cudnn', pluginVersion }, false)
              .out,
          };
        }),
      new RegExp(
        `pinned to ${CUDNN_PINNED_PLUGIN.wheel} ${CUDNN_PINNED_PLUGIN.version.replace(/\./g, '\\.')}.*${pluginVersion ?? 'unknown version'}`,
      ),
      `plugin ${pluginVersion ?? '(unknown)'} refused`,
    );
  }
  t.equal(emittedCall(c).includes('__cudnn$fmhaSoftmax'), true, 'the pinned version emits the call');
  t.deepEqual(parsePrefixAttentionTag('cudnn'), { kind: 'cudnn', standIn: false }, 'tag cudnn');
  t.deepEqual(parseCausalAttentionTag('cudnnsim'), { kind: 'cudnn', standIn: true }, 'tag cudnnsim');
  t.end();
});

let client;
test('setup: CPU client', async (t) => {
  client = await Client.create();
  t.ok(client, 'created');
});

const SIM = parsePrefixAttentionTag('cudnnsim');

test('factored form on the stand-in: prefix part and own part merged by statistics = the joint softmax (float64), within 1e-5', async (t) => {
  const cases = [
    { P: 24, N: 3, L: 5, Hq: 3, Hkv: 1, D: 64, prefixLength: 19, itemLengths: [5, 2, 4] },
    { P: 16, N: 2, L: 4, Hq: 4, Hkv: 2, D: 32, prefixLength: 16, itemLengths: [4, 1] },
  ];
  for (const [i, c] of cases.entries()) {
    const inputs = prefixForms.makeInputs(100 + i, c);
    const [got, joint] = await runProgram(client, prefixForms.program(c, [SIM, { kind: 'joint' }]), inputs);
    const want = prefixForms.reference(c, inputs);
    let max = 0;
    for (let j = 0; j < want.length; j++) max = Math.max(max, Math.abs(got[j] - want[j]));
    t.ok(
      max <= TOL,
      `P=${c.P} (${c.prefixLength} valid) N=${c.N} L=${c.L} ${c.Hq}/${c.Hkv}x${c.D}: max |diff| ${max.toExponential(2)} against float64`,
    );
    let maxJoint = 0;
    for (let j = 0; j < want.length; j++) maxJoint = Math.max(maxJoint, Math.abs(got[j] - joint[j]));
    t.ok(maxJoint <= TOL, `and ${maxJoint.toExponential(2)} against the joint form`);
    const L = c.L;
    const rowSize = c.Hq * c.D;
    let padding = 0;
    c.itemLengths.forEach((len, n) => {
      for (let j = len; j < L; j++)
        for (let x = 0; x < rowSize; x++) padding = Math.max(padding, Math.abs(got[(n * L + j) * rowSize + x]));
    });
    t.equal(padding, 0, 'padding item tokens are exactly 0');
  }
});

test("the joined prefill on the stand-in, one group and three: each group's [prefill ; items] rows = the float64 factored attention, within 1e-5", async (t) => {
  const { queryAndItemsAttentionCudnn } = require('../dist/hlo');
  const { PassRows } = require('../dist/hlo');
  const [P, N, L, Hq, Hkv, D] = [10, 3, 4, 4, 2, 32];
  const T = P + N * L;
  const next = ref.rng(11);
  // One group with 7 of 10 prefill rows valid; three with a full prefill, a short one and none (the items alone).
  for (const groups of [
    [{ prefixLength: 7, itemLengths: [4, 1, 3] }],
    [
      { prefixLength: 10, itemLengths: [2, 4, 4] },
      { prefixLength: 3, itemLengths: [4, 0, 1] },
      { prefixLength: 0, itemLengths: [3, 2, 4] },
    ],
  ]) {
    const G = groups.length;
    const rows = new PassRows(G, P, N, L);
    const lead = rows.lead;
    const prog = buildProgram('cudnn_sim_join', (f) => {
      const q = f.param(TensorType.f32([G * T, Hq, D]), 'q');
      const k = f.param(TensorType.f32([G * T, Hkv, D]), 'k');
      const v = f.param(TensorType.f32([G * T, Hkv, D]), 'v');
      const prefixLength = f.param(TensorType.s32(lead), 'prefix_length');
      const itemLengths = f.param(TensorType.s32([...lead, N]), 'item_lengths');
      return {
        out: queryAndItemsAttentionCudnn(
          f,
          { q, k, v, rows, prefixLength, itemLengths },
          parsePrefixAttentionTag('cudnnsim_join'),
        ),
      };
    });
    const q = ref.randomF32(next, G * T * Hq * D);
    const k = ref.randomF32(next, G * T * Hkv * D);
    const v = ref.randomF32(next, G * T * Hkv * D);
    const [got] = await runProgram(client, prog, [
      q,
      k,
      v,
      Int32Array.from(groups.map((g) => g.prefixLength)),
      Int32Array.from(groups.flatMap((g) => g.itemLengths)),
    ]);
    let max = 0;
    groups.forEach((g, gi) => {
      // Group gi's rows, as the reference's query and item arrays.
      const part = (a, h, from, to) => a.subarray((gi * T + from) * h * D, (gi * T + to) * h * D);
      const want = ref.factoredAttention({
        queryQ: part(q, Hq, 0, P),
        queryK: part(k, Hkv, 0, P),
        queryV: part(v, Hkv, 0, P),
        queryLength: g.prefixLength,
        itemQ: part(q, Hq, P, T),
        itemK: part(k, Hkv, P, T),
        itemV: part(v, Hkv, P, T),
        itemLengths: g.itemLengths,
        P,
        N,
        L,
        Hq,
        Hkv,
        D,
      });
      const base = gi * T * Hq * D;
      want.queryOut.forEach((x, j) => (max = Math.max(max, Math.abs(got[base + j] - x))));
      want.itemOut.forEach((x, j) => (max = Math.max(max, Math.abs(got[base + P * Hq * D + j] - x))));
    });
    t.ok(
      max <= TOL,
      `${G} group${G > 1 ? 's' : ''}: max |diff| ${max.toExponential(2)} against float64 (padding rows 0 on both sides)`,
    );
  }
});

test("the stand-in's statistics are each row's log-sum-exp of the visible scaled scores (float64), and the causal prefill on it", async (t) => {
  const [B, Tk, Hq, Hkv, D] = [2, 9, 4, 2, 32];
  const kvLengths = [9, 5];
  const next = ref.rng(7);
  // padding: keys past the length; padding_causal: also keys after the row (top-left diagonal), here with more rows than keys.
  for (const [mask, T, sees] of [
    ['padding', 6, (i, j, len) => j < len],
    ['padding_causal', 12, (i, j, len) => j < len && j <= i],
  ]) {
    const prog = buildProgram('cudnn_sim_stats', (f) => {
      const q = f.param(TensorType.f32([B, T, Hq, D]), 'q');
      const k = f.param(TensorType.f32([B, Tk, Hkv, D]), 'k');
      const v = f.param(TensorType.f32([B, Tk, Hkv, D]), 'v');
      const len = f.param(TensorType.s32([B]), 'len');
      const r = fusedAttention(f, { q, k, v, mask, kvLengths: len, scale: 1 / Math.sqrt(D) }, SIM, true);
      return { out: r.out, stats: r.stats };
    });
    const q = ref.randomF32(next, B * T * Hq * D);
    const k = ref.randomF32(next, B * Tk * Hkv * D);
    const v = ref.randomF32(next, B * Tk * Hkv * D);
    const [, stats] = await runProgram(client, prog, [q, k, v, Int32Array.from(kvLengths)]);
    let max = 0;
    for (let b = 0; b < B; b++) {
      for (let i = 0; i < T; i++) {
        for (let h = 0; h < Hq; h++) {
          const kv = Math.floor(h / (Hq / Hkv));
          const s = [];
          for (let j = 0; j < Tk; j++) {
            if (!sees(i, j, kvLengths[b])) continue;
            let dot = 0;
            for (let x = 0; x < D; x++) dot += q[((b * T + i) * Hq + h) * D + x] * k[((b * Tk + j) * Hkv + kv) * D + x];
            s.push(dot / Math.sqrt(D));
          }
          const m = Math.max(...s);
          const lse = m + Math.log(s.reduce((a, x) => a + Math.exp(x - m), 0));
          max = Math.max(max, Math.abs(stats[(b * T + i) * Hq + h] - lse));
        }
      }
    }
    t.ok(max <= TOL, `${mask}: statistics within ${max.toExponential(2)} of the float64 log-sum-exp`);
  }

  // The prefill's causal attention on the stand-in against the square form, 7 of 9 rows valid.
  const P = 9;
  const causal = buildProgram('cudnn_sim_causal', (f) => {
    const cq = f.param(TensorType.f32([P, Hq, D]), 'q');
    const ck = f.param(TensorType.f32([P, Hkv, D]), 'k');
    const cv = f.param(TensorType.f32([P, Hkv, D]), 'v');
    const n = f.param(TensorType.s32([]), 'n');
    return {
      sim: causalPrefix(f, cq, ck, cv, n, parseCausalAttentionTag('cudnnsim')),
      square: causalPrefix(f, cq, ck, cv, n, parseCausalAttentionTag('square')),
    };
  });
  const [sim, square] = await runProgram(client, causal, [
    ref.randomF32(next, P * Hq * D),
    ref.randomF32(next, P * Hkv * D),
    ref.randomF32(next, P * Hkv * D),
    Int32Array.of(7),
  ]);
  let maxCausal = 0;
  for (let j = 0; j < sim.length; j++) maxCausal = Math.max(maxCausal, Math.abs(sim[j] - square[j]));
  t.ok(maxCausal <= TOL, `causal prefill on the stand-in within ${maxCausal.toExponential(2)} of the square form`);
});

test('Scorer: the cudnn form on a CPU plugin is refused at load, naming the pinned plugin; the stand-in forms score as the defaults within 1e-5', async (t) => {
  const os = require('node:os');
  const tiny = require('./helpers/tiny-model');
  const { Scorer } = require('../dist/scoring/scorer');
  const { cudaPluginWheelVersion } = require('../dist/assets/installed-cuda-plugin');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-cudnn-'));
  try {
    // The wheel version beside a plugin file, as jax-cuda13-pjrt ships it.
    fs.writeFileSync(
      path.join(dir, 'version.py'),
      '# comment\n_version = "0.11.2"\n_release_version: str | None = None\n',
    );
    t.equal(
      cudaPluginWheelVersion(path.join(dir, 'xla_cuda_plugin.so')),
      '0.11.2',
      'version.py beside the plugin gives its wheel version',
    );
    t.equal(cudaPluginWheelVersion(path.join(os.tmpdir(), 'nowhere', 'x.so')), undefined, 'no version.py: unknown');

    const model = tiny.writeTinyHfDir(tiny.makeTinyModel('qwen3'), path.join(dir, 'model'));
    await Scorer.load({ model, diskCache: false, prefixAttention: parsePrefixAttentionTag('cudnn') }).then(
      (s) => {
        s.dispose();
        t.fail('cudnn loaded on the CPU plugin');
      },
      (err) =>
        t.match(
          String(err.message),
          /pinned to the CUDA plugin of jax-cuda13-pjrt 0\.11\.2.*platform cpu/,
          `refused: ${err.message.slice(0, 160)}`,
        ),
    );

    const plain = await Scorer.load({ model, diskCache: false, batching: 'cross-request' });
    // The stand-in forms, and the prefix form with the own keys in StableHLO (tag cudnnsim_ownhlo).
    for (const prefixTag of ['cudnnsim', 'cudnnsim_ownhlo', 'cudnnsim_join']) {
      const sim = await Scorer.load({
        model,
        diskCache: false,
        batching: 'cross-request',
        prefixAttention: parsePrefixAttentionTag(prefixTag),
        causalAttention: parseCausalAttentionTag('cudnnsim'),
      });
      const make = (r) => ({
        query: Array.from({ length: 11 + 5 * (r % 3) }, (_, i) => 5 + ((i * 7 + r) % 40)),
        items: Array.from({ length: 4 + (r % 3) }, (_, n) =>
          Array.from({ length: 1 + ((n + r) % 4) }, (_, j) => 6 + ((n * 5 + j * 3 + r) % 40)),
        ),
        labelTokenIds: [3, 4],
      });
      const requests = [0, 1, 2].map(make);
      // Queries not scored before: a query the prefix cache holds runs its own extends, not a shared pass.
      const fresh = [3, 4, 5].map(make);
      let worst = 0;
      const compare = (a, b) =>
        a.scores.forEach((row, i) => row.forEach((v, l) => (worst = Math.max(worst, Math.abs(v - b.scores[i][l])))));
      for (const algorithm of ['packed', 'prefix']) {
        for (const r of requests) compare(await sim.score({ ...r, algorithm }), await plain.score({ ...r, algorithm }));
      }
      const batchedBefore = sim.stats().batchedPasses;
      const together = await Promise.all(fresh.map((r) => sim.score(r)));
      t.ok(sim.stats().batchedPasses > batchedBefore, `${prefixTag}: the concurrent calls ran in a cross-request pass`);
      for (const [i, r] of fresh.entries()) compare(together[i], await plain.score(r));
      t.ok(
        worst <= TOL,
        `${prefixTag}: packed, prefix and 3 concurrent cross-request calls: max |diff| ${worst.toExponential(2)} against the default forms`,
      );
      sim.dispose();
    }
    plain.dispose();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('teardown', (t) => {
  client.dispose();
  t.end();
});
