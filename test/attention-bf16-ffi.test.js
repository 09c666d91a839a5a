'use strict';
// The attention kernels in bf16 (native/kernels/prefix_attention_bf16.cc: custom
// calls pjrt_score_prefix_attention_bf16 and pjrt_score_causal_attention_bf16,
// what the kernel forms emit in a function whose dots run in bf16) on every
// bf16 path this CPU has (the portable tiles everywhere; AVX512_BF16 and AMX
// where the CPU has them; on AVX2 and AVX-512 CPUs without bf16 dot units the
// f32 kernel; PJRT_SCORE_KERNEL_ISA caps the choice), against the
// float64 reference on odd shapes (D not a multiple of 32, items over 32
// tokens, several key blocks, prefix length 0, GQA): within the accuracy gate
// (max |diff| <= 0.02, mean <= 0.01; outputs are averages of values in
// [-1, 1)), and within 2e-3 of the float64 reference on bf16-rounded q, K, V
// (what is left is the probabilities' rounding to bf16), masked rows exactly
// 0. Tile paths differ only in the tile product: they agree within 5e-4.
const test = require('tape');
const { Client } = require('../dist/runtime');
const {
  buildProgram,
  TensorType,
  itemsOverPrefix,
  causalPrefix,
  parsePrefixAttentionTag,
  parseCausalAttentionTag,
} = require('../dist/hlo');
const ref = require('./helpers/attention-reference');
const { runProgram } = require('./helpers/run-program');
const { makeInputs, prefixParams, reference: prefixReference } = require('./helpers/prefix-forms');
const { cpuIsa, withIsa, bf16Paths } = require('./helpers/kernel-path');

let client;

const bf16 = (x) => {
  const f = new Float32Array(1);
  const u = new Uint32Array(f.buffer);
  return Float32Array.from(x, (v) => {
    f[0] = v;
    u[0] = (u[0] + 0x7fff + ((u[0] >>> 16) & 1)) & 0xffff0000;
    return f[0];
  });
};

function gate(out, expect) {
  let max = 0;
  let sum = 0;
  for (let i = 0; i < out.length; i++) {
    const d = Math.abs(out[i] - expect[i]);
    max = Math.max(max, d);
    sum += d;
  }
  return { max, mean: sum / Math.max(out.length, 1) };
}

const PREFIX_CASES = [
  {
    name: 'D=64 GQA 3, P=301 with 290 valid, 13 items of up to 11',
    P: 301,
    prefixLength: 290,
    N: 13,
    L: 11,
    itemLengths: [11, 1, 0, 7, 11, 3, 9, 11, 2, 5, 11, 10, 6],
    Hq: 9,
    Hkv: 3,
    D: 64,
  },
  {
    name: 'D=40 (padded to 64), P=13 with 11 valid, N=3, L=4, GQA 3',
    P: 13,
    prefixLength: 11,
    N: 3,
    L: 4,
    itemLengths: [4, 2, 0],
    Hq: 6,
    Hkv: 2,
    D: 40,
  },
  {
    name: 'D=5, prefix all padding, N=2, L=3',
    P: 10,
    prefixLength: 0,
    N: 2,
    L: 3,
    itemLengths: [2, 3],
    Hq: 2,
    Hkv: 1,
    D: 5,
  },
  {
    name: 'long items: D=48, P=100, N=2, L=300 (own keys in blocks), GQA 2',
    P: 100,
    prefixLength: 100,
    N: 2,
    L: 300,
    itemLengths: [300, 257],
    Hq: 4,
    Hkv: 2,
    D: 48,
  },
  {
    name: 'long items: D=64, P=270 with 259 valid, N=1, L=530 with 529 valid, MHA',
    P: 270,
    prefixLength: 259,
    N: 1,
    L: 530,
    itemLengths: [529],
    Hq: 2,
    Hkv: 2,
    D: 64,
  },
];

function prefixProgram(c) {
  return buildProgram(
    'items_over_prefix_bf16',
    (f) => ({ out: itemsOverPrefix(f, prefixParams(f, c), parsePrefixAttentionTag('ffi')) }),
    { dotOperands: 'bf16' },
  );
}

test('setup: the bf16 targets are registered; the bf16 paths of this CPU', async (t) => {
  client = await Client.create();
  t.equal(client.prefixAttentionKernel, true);
  t.match(
    prefixProgram(PREFIX_CASES[1]).text,
    /call_target_name = "pjrt_score_prefix_attention_bf16"/,
    'a bf16 function calls the bf16 target',
  );
  t.pass(
    `CPU ${cpuIsa}: bf16 paths run here: ${bf16Paths()
      .map((p) => p.path)
      .join(', ')}${cpuIsa === 'amx' ? '' : ' (amx: not run here)'}`,
  );
});

PREFIX_CASES.forEach((c, ci) => {
  test(`bf16 prefix kernel vs the float64 reference: ${c.name}`, async (t) => {
    const inputs = makeInputs(900 + ci, c);
    const prog = prefixProgram(c);
    const exact = prefixReference(c, inputs);
    // q scaled by 1/sqrt(D) in f32 first, as the kernel form does, then rounded: the kernel's q.
    const scale = Math.fround(1 / Math.sqrt(c.D));
    const qRounded = bf16(Float32Array.from(inputs[0], (x) => Math.fround(x * scale)));
    const rounded = prefixReference({ ...c }, [
      Float64Array.from(qRounded, (x) => x / scale),
      bf16(inputs[1]),
      bf16(inputs[2]),
      inputs[3],
      bf16(inputs[4]),
      bf16(inputs[5]),
    ]);
    const w = c.Hq * c.D;
    const outs = {};
    for (const { isa, path } of bf16Paths(c.D)) {
      const [out] = await withIsa(isa, () => runProgram(client, prog, inputs));
      outs[path] = out;
      const g = gate(out, exact);
      t.ok(out.every(Number.isFinite), `${path}: finite`);
      t.ok(
        g.max <= 0.02 && g.mean <= 0.01,
        `${path}: vs float64 max ${g.max.toExponential(2)} <= 0.02, mean ${g.mean.toExponential(2)} <= 0.01`,
      );
      const r = ref.maxAbsDiff(out, rounded);
      t.ok(r <= 2e-3, `${path}: vs float64 on bf16-rounded operands ${r.toExponential(2)} <= 2e-3`);
      const pad = [];
      c.itemLengths.forEach((len, n) => {
        for (let j = Math.max(0, len); j < c.L; j++) pad.push(n * c.L + j);
      });
      t.ok(
        pad.every((p) => out.subarray(p * w, (p + 1) * w).every((x) => x === 0)),
        `${path}: padding rows exactly 0 (${pad.length})`,
      );
    }
    const paths = Object.keys(outs);
    for (const path of paths.filter((p) => p !== 'portable' && !p.startsWith('f32')))
      t.ok(
        ref.maxAbsDiff(outs[path], outs.portable) <= 5e-4,
        `${path} vs portable tiles ${ref.maxAbsDiff(outs[path], outs.portable).toExponential(2)} <= 5e-4`,
      );
  });
});

test('bf16 causal kernel vs the float64 causal reference: T=600 with 555 valid (3 blocks), GQA 3, D=64; T=37, D=40', async (t) => {
  for (const c of [
    { T: 600, validLength: 555, Hq: 6, Hkv: 2, D: 64 },
    { T: 37, validLength: 37, Hq: 2, Hkv: 1, D: 40 },
  ]) {
    const next = ref.rng(77 + c.T);
    const q = ref.randomF32(next, c.T * c.Hq * c.D);
    const k = ref.randomF32(next, c.T * c.Hkv * c.D);
    const v = ref.randomF32(next, c.T * c.Hkv * c.D);
    const prog = buildProgram(
      'causal_bf16',
      (f) => {
        const args = [
          f.param(TensorType.f32([c.T, c.Hq, c.D]), 'q'),
          f.param(TensorType.f32([c.T, c.Hkv, c.D]), 'k'),
          f.param(TensorType.f32([c.T, c.Hkv, c.D]), 'v'),
          f.param(TensorType.s32([]), 'len'),
        ];
        return { out: causalPrefix(f, ...args, parseCausalAttentionTag('ffi')) };
      },
      { dotOperands: 'bf16' },
    );
    t.match(
      prog.text,
      /call_target_name = "pjrt_score_causal_attention_bf16"/,
      'a bf16 function calls the bf16 causal target',
    );
    const exact = ref.factoredAttention({
      queryQ: q,
      queryK: k,
      queryV: v,
      queryLength: c.validLength,
      itemQ: new Float32Array(0),
      itemK: new Float32Array(0),
      itemV: new Float32Array(0),
      itemLengths: new Int32Array(0),
      P: c.T,
      N: 0,
      L: 0,
      Hq: c.Hq,
      Hkv: c.Hkv,
      D: c.D,
    }).queryOut;
    for (const { isa, path } of bf16Paths(c.D)) {
      const [out] = await withIsa(isa, () => runProgram(client, prog, [q, k, v, Int32Array.of(c.validLength)]));
      const g = gate(out, exact);
      t.ok(
        g.max <= 0.02 && g.mean <= 0.01,
        `T=${c.T} D=${c.D} ${path}: max ${g.max.toExponential(2)} <= 0.02, mean ${g.mean.toExponential(2)} <= 0.01`,
      );
      t.ok(
        out.subarray(c.validLength * c.Hq * c.D).every((x) => x === 0),
        `${path}: rows past the valid length exactly 0`,
      );
    }
  }
});

test("dispatch: the paths by ISA cap; a cap above the CPU or an unknown name gets the CPU's best; bad input is a TypeError", (t) => {
  const { attentionKernelPaths, KERNEL_ISAS } = require('../dist/runtime');
  const order = (isa) => KERNEL_ISAS.indexOf(isa);
  const at = (isa, d) => {
    process.env.PJRT_SCORE_KERNEL_ISA = isa;
    try {
      return attentionKernelPaths(d);
    } finally {
      delete process.env.PJRT_SCORE_KERNEL_ISA;
    }
  };
  for (const isa of KERNEL_ISAS) {
    const p = at(isa, 64);
    const allowed = order(isa) <= order(cpuIsa) ? isa : cpuIsa;
    t.equal(p.allowed, allowed, `cap ${isa} on a ${cpuIsa} CPU: allowed ${p.allowed}`);
    const f32 = order(allowed) >= order('avx512') ? 'avx512' : order(allowed) >= order('avx2') ? 'avx2' : 'portable';
    t.equal(p.f32, f32, `cap ${isa}: f32 path ${p.f32}`);
    const bf16 =
      allowed === 'amx'
        ? 'amx'
        : allowed === 'avx512bf16'
          ? 'avx512bf16'
          : allowed === 'portable'
            ? 'portable'
            : `f32 ${f32}`;
    t.equal(p.bf16, bf16, `cap ${isa}: bf16 path ${p.bf16}`);
  }
  t.equal(at('sse9', 64).allowed, cpuIsa, 'an unknown name caps nothing');
  t.equal(at('avx512', 40).f32, 'portable', 'D = 40: the f32 SIMD paths need D a multiple of 16');
  t.equal(attentionKernelPaths(64).cpu, cpuIsa, 'no cap: the CPU');
  for (const bad of [0, 1.5, -3, 1e9, NaN])
    t.throws(() => attentionKernelPaths(bad), TypeError, `headDim ${bad}: TypeError`);
  t.end();
});

test('teardown', (t) => {
  client.dispose();
  t.end();
});
