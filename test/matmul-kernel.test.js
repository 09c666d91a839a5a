'use strict';
// The addon's bf16 matmul kernel (native/kernels/matmul_bf16.cc, the custom call
// `pjrt_score_matmul_bf16` registered with the real CPU plugin; lib/hlo/nn/matmul-kernel.ts):
// - against a float64 JS loop over the operands rounded to bf16 (nearest even), on odd shapes
//   (rows not a multiple of the row tile, columns not a multiple of the panel, odd K, one row),
//   weights f32 and bf16 bits typed u16 and bf16, every layer of a stack and indices that clamp,
//   on each path this CPU has (portable, avx512bf16: PJRT_SCORE_KERNEL_ISA, read on every call);
// - against XLA's own bf16 x bf16 -> f32 dot of the same operands (another implementation);
// - a malformed call is an error from the handler, and the process lives;
// - its prologues (the layer's RMSNorm; SwiGLU or GeGLU of a gate | up input) against the same float64 loop
//   after the prologue in float64, and against XLA's program for the same norm or activation and dot;
// - weights packed once (the load's packing program, packMatmulWeights): the panels a plain JS loop
//   lays out, bit for bit; the kernel on them gives what it gives on the stacked matrices, bit for bit
//   (the same panels into the same tiles), and the float64 loop's result; malformed packed operands
//   are refused by the builder and by the handler;
// - live rows (a pass's padding skipped) and the residual epilogue: the padding rows 0 (or the
//   residual), the live rows bit for bit the full call's (plus the residual, one f32 add); malformed
//   live rows and residuals refused;
// - the f32 kernel (`pjrt_score_matmul_f32`, f32 products and sums) against a float64 loop on the
//   f32 operands, with each prologue, on each path this CPU has (portable, avx512), and against XLA's
//   f32 program, K past its depth block included (the panel taken in blocks); malformed calls refused;
// - the Scorer takes it under bf16 dots where the platform facts say so (bf16 dot units here),
//   with its four matrices packed (half the bytes of f32), explain() says it,
//   PJRT_SCORE_PLATFORM_FACTS turns it off, and its scores stay within the accuracy gate of true f32.
const test = require('tape');
const { Client, Scorer } = require('..');
const { binding } = require('../dist/runtime/binding');
const {
  buildProgram,
  TensorType,
  matmulBf16Kernel,
  matmulF32Kernel,
  nn,
  packMatmulRows,
  packMatmulWeights,
  packedMatmulDims,
  packedMatmulDimsF32,
  MATMUL_PANEL_COLUMNS,
  MATMUL_BF16_TARGET,
  MATMUL_BF16_RMSNORM_TARGET,
  MATMUL_BF16_SWIGLU_TARGET,
  MATMUL_F32_TARGET,
} = require('../dist/hlo');
const { runProgram } = require('./helpers/run-program');
const { cpuIsa, withIsa } = require('./helpers/kernel-path');

const BF16_UNITS = ['avx512bf16', 'amx'].includes(cpuIsa);
const AVX512 = ['avx512', 'avx512bf16', 'amx'].includes(cpuIsa);
// The f32 kernel's paths: its AVX-512 tiles where the CPU has them.
const F32_PATHS = AVX512
  ? [
      ['portable', 'portable'],
      [null, 'avx512'],
    ]
  : [['portable', 'portable']];
// The paths this CPU runs: the portable loop everywhere, vdpbf16ps where the CPU has it.
const PATHS = BF16_UNITS
  ? [
      ['portable', 'portable'],
      [null, 'avx512bf16'],
    ]
  : [['portable', 'portable']];

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
/** The bf16 bits of a number rounded to f32, then to nearest even. */
function bf16Bits(value) {
  f32[0] = value;
  const b = u32[0];
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}
function fromBits(bits) {
  u32[0] = bits << 16;
  return f32[0];
}

/** Deterministic values in [-1, 1), some large and some tiny, so rounding matters. */
// The prologues of an MLP's gate | up input [T, 2K]: SwiGLU, and Gemma's GeGLU (the tanh GELU).
const GATED = ['swiglu', 'geglu'];

/** XLA's program for a gated prologue: silu(gate) * up, or gelu_tanh(gate) * up as transformers writes it. */
function xlaGated(f, kind, xs, T, K) {
  const g = f.slice(xs, [0, 0], [T, K]);
  const up = f.slice(xs, [0, K], [T, 2 * K]);
  if (kind === 'swiglu') return f.multiply(f.multiply(g, f.logistic(g)), up);
  const inner = f.multiply(f.add(g, f.multiply(f.multiply(f.multiply(g, g), g), 0.044715)), Math.sqrt(2 / Math.PI));
  return f.multiply(f.multiply(f.multiply(g, 0.5), f.add(f.tanh(inner), 1)), up);
}

function fill(n, seed) {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, (_, i) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const v = (s / 2 ** 32) * 2 - 1;
    return i % 7 === 3 ? v * 37.25 : i % 11 === 5 ? v * 1e-3 : v;
  });
}

/** out[t][n] = sum_k bf16(x[t][k]) * bf16(w[layer][k][n]) in float64, and the sum of |products| (the error scale). */
function reference(x, w, t, k, n, layer) {
  const out = new Float64Array(t * n);
  const scale = new Float64Array(t * n);
  for (let r = 0; r < t; r++) {
    for (let c = 0; c < n; c++) {
      let sum = 0;
      let abs = 0;
      for (let j = 0; j < k; j++) {
        const p = fromBits(bf16Bits(x[r * k + j])) * fromBits(bf16Bits(w[(layer * k + j) * n + c]));
        sum += p;
        abs += Math.abs(p);
      }
      out[r * n + c] = sum;
      scale[r * n + c] = abs;
    }
  }
  return { out, scale };
}

function kernelProgram(t, k, n, layers, wType) {
  return buildProgram(`matmul_kernel_${t}_${k}_${n}_${layers}_${wType}`, (f) => {
    const x = f.param(TensorType.f32([t, k]), 'x');
    const w = f.param(new TensorType(wType, [layers, k, n]), 'w');
    const layer = f.param(new TensorType('s32', []), 'layer');
    return { y: matmulBf16Kernel(f, x, w, layer) };
  });
}

/** The weights as the device gets them: f32, or their bf16 bits (u16 and bf16 take the same bits). */
function weightsAs(w, wType) {
  return wType === 'f32' ? w : Uint16Array.from(w, bf16Bits);
}

let client;
test('setup: a CPU client with the addon kernels registered', async (t) => {
  client = await Client.create();
  t.equal(client.platformName, 'cpu');
  t.ok(client.prefixAttentionKernel, 'the plugin registered the addon kernels');
  t.end();
});

/**
 * A custom call to `target` on `operands(f)` with an f32 result of `result` dims runs, zero-filled, and must
 * fail with `message`: the handler's error, and the process lives.
 */
async function expectRefused(t, name, target, operands, result, message) {
  const prog = buildProgram(`matmul_bad_${name.replace(/\W+/g, '_')}`, (f) => ({
    y: f.customCall(target, operands(f), [TensorType.f32(result)])[0],
  }));
  const inputs = prog.inputs.map((spec) => {
    const n = spec.dims.reduce((a, b) => a * b, 1);
    return spec.dtype === 's32' ? new Int32Array(n) : spec.dtype === 'u16' ? new Uint16Array(n) : new Float32Array(n);
  });
  await runProgram(client, prog, inputs).then(
    () => t.fail(`${name}: ran`),
    (err) => t.match(String(err.message), message, `${name}: ${String(err.message).split('\n')[0].slice(0, 160)}`),
  );
}

const SHAPES = [
  { t: 19, k: 70, n: 50, layers: 3 }, // a partial row tile and a partial panel
  { t: 16, k: 64, n: 64, layers: 1 }, // whole tiles and panels
  { t: 1, k: 576, n: 96, layers: 2 }, // one row, the default model's K
  { t: 9, k: 33, n: 7, layers: 2 }, // odd K, fewer columns than a panel
  { t: 40, k: 2, n: 33, layers: 1 }, // one pair
  { t: 19, k: 8195, n: 40, layers: 2 }, // K past the f32 kernel's depth block: its panels in blocks, odd K
];

for (const { t: T, k: K, n: N, layers: Ly } of SHAPES) {
  for (const wType of ['f32', 'u16', 'bf16']) {
    test(`matmul kernel [${T}x${K}]·[${Ly}x${K}x${N}] ${wType} weights: the float64 loop on bf16 operands, every layer, every path`, async (t) => {
      const x = fill(T * K, T * 31 + K);
      const w = fill(Ly * K * N, N * 17 + Ly);
      const prog = kernelProgram(T, K, N, Ly, wType);
      // Layer indices past either end clamp like a dynamic slice's start.
      const layers = [...Array.from({ length: Ly }, (_, l) => [l, l]), [-4, 0], [Ly + 2, Ly - 1]];
      for (const [isa, path] of PATHS) {
        await withIsa(isa, async () => {
          t.equal(binding().matmulKernelPath(), path, `the ${path} path`);
          for (const [asked, used] of layers) {
            const [y] = await runProgram(client, prog, [x, weightsAs(w, wType), Int32Array.of(asked)]);
            const { out, scale } = reference(x, w, T, K, N, used);
            let worst = 0;
            // f32 sums of K exact products: |error| <= K 2^-24 sum|products| (Higham's bound for a recursive sum).
            const bound = K * 2 ** -24;
            for (let i = 0; i < out.length; i++)
              worst = Math.max(worst, Math.abs(y[i] - out[i]) / (scale[i] * bound + 1e-30));
            t.ok(
              worst <= 1,
              `${path}, layer ${asked}${asked !== used ? ` (clamped to ${used})` : ''}: |diff| <= K 2^-24 sum|products| (worst ${worst.toFixed(3)} of it)`,
            );
          }
        });
      }
    });
  }
}

test("the kernel computes XLA's bf16 x bf16 -> f32 dot of the same operands", async (t) => {
  const [T, K, N] = [37, 576, 96];
  const x = fill(T * K, 5);
  const w = fill(K * N, 6);
  const xla = buildProgram(
    'xla_bf16_dot',
    (f) => ({ y: f.matmul(f.param(TensorType.f32([T, K]), 'x'), f.param(TensorType.f32([K, N]), 'w')) }),
    { dotPrecision: 'DEFAULT', dotOperands: 'bf16' },
  );
  const [want] = await runProgram(client, xla, [x, w]);
  const [got] = await runProgram(client, kernelProgram(T, K, N, 1, 'f32'), [x, w, Int32Array.of(0)]);
  const { scale } = reference(x, w, T, K, N, 0);
  let worst = 0;
  // Both are f32 sums of the same exact products: each within K 2^-24 sum|products| of the exact sum.
  for (let i = 0; i < want.length; i++)
    worst = Math.max(worst, Math.abs(got[i] - want[i]) / (scale[i] * 2 * K * 2 ** -24));
  t.ok(worst <= 1, `within 2 K 2^-24 x sum|products| of XLA's (worst ${worst.toFixed(4)} of it)`);
  t.end();
});

/** A row after a prologue, in float64: the RMSNorm of x with norm weights, or SwiGLU or GeGLU (tanh GELU) of gate | up. */
function prologueRows(kind, x, T, K, norm, eps) {
  const out = new Float64Array(T * K);
  for (let r = 0; r < T; r++) {
    if (kind === 'rmsNorm') {
      let sum = 0;
      for (let c = 0; c < K; c++) sum += x[r * K + c] ** 2;
      const factor = 1 / Math.sqrt(sum / K + eps);
      for (let c = 0; c < K; c++) out[r * K + c] = x[r * K + c] * factor * norm[c];
    } else {
      for (let c = 0; c < K; c++) {
        const g = x[r * 2 * K + c];
        const activated =
          kind === 'swiglu'
            ? g / (1 + Math.exp(-g))
            : 0.5 * g * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (g + 0.044715 * g ** 3)));
        out[r * K + c] = activated * x[r * 2 * K + K + c];
      }
    }
  }
  return Float32Array.from(out);
}

for (const kind of ['rmsNorm', ...GATED]) {
  test(`the ${kind} prologue: the float64 loop after the prologue in float64, and XLA's program for it`, async (t) => {
    const [T, K, N, Ly] = [21, 96, 40, 2];
    const eps = 1e-5;
    const x = fill(T * (GATED.includes(kind) ? 2 : 1) * K, 77);
    const w = fill(Ly * K * N, 78);
    const norms = Float32Array.from(fill(Ly * K, 79), (v) => 1 + v / 4);
    const prog = buildProgram(`matmul_kernel_${kind}`, (f) => {
      const xs = f.param(TensorType.f32([T, (GATED.includes(kind) ? 2 : 1) * K]), 'x');
      const ws = f.param(TensorType.f32([Ly, K, N]), 'w');
      const ns = f.param(TensorType.f32([Ly, K]), 'norms');
      const layer = f.param(new TensorType('s32', []), 'layer');
      const prologue = kind === 'rmsNorm' ? { kind, weights: ns, eps } : { kind };
      return { y: matmulBf16Kernel(f, xs, ws, layer, prologue) };
    });
    const xla = buildProgram(
      `xla_${kind}`,
      (f) => {
        const xs = f.param(TensorType.f32([T, (GATED.includes(kind) ? 2 : 1) * K]), 'x');
        const ws = f.param(TensorType.f32([Ly, K, N]), 'w');
        const ns = f.param(TensorType.f32([Ly, K]), 'norms');
        const layer = f.param(new TensorType('s32', []), 'layer');
        const w1 = f.reshape(f.dynamicSlice(ws, [layer, f.scalar(0, 's32'), f.scalar(0, 's32')], [1, K, N]), [K, N]);
        let input;
        if (kind === 'rmsNorm') {
          input = nn.rmsNorm(f, xs, f.reshape(f.dynamicSlice(ns, [layer, f.scalar(0, 's32')], [1, K]), [K]), eps);
        } else {
          input = xlaGated(f, kind, xs, T, K);
        }
        return { y: f.matmul(input, w1) };
      },
      { dotPrecision: 'DEFAULT', dotOperands: 'bf16' },
    );
    for (const layer of [0, 1]) {
      const rows = prologueRows(kind, x, T, K, norms.subarray(layer * K, (layer + 1) * K), eps);
      const { out, scale } = reference(rows, w, T, K, N, layer);
      // f32 sums (K 2^-24 sum|products|), and up to two of an output's K operands rounded to the other
      // neighbouring bf16 (the prologue's f32 value against the float64 one: 2^-7 |product| each).
      const bound = (i) => K * 2 ** -24 * scale[i] + 2 * 2 ** -7 * maxProduct(rows, w, T, K, N, layer, i);
      const [want] = await runProgram(client, xla, [x, w, norms, Int32Array.of(layer)]);
      for (const [isa, path] of PATHS) {
        await withIsa(isa, async () => {
          const [got] = await runProgram(client, prog, [x, w, norms, Int32Array.of(layer)]);
          let worst = 0;
          let worstXla = 0;
          for (let i = 0; i < out.length; i++) {
            worst = Math.max(worst, Math.abs(got[i] - out[i]) / bound(i));
            worstXla = Math.max(worstXla, Math.abs(got[i] - want[i]) / (2 * bound(i)));
          }
          t.ok(
            worst <= 1,
            `${path}, layer ${layer}: within the bound of the float64 loop (worst ${worst.toExponential(1)} of it)`,
          );
          t.ok(
            worstXla <= 1,
            `${path}, layer ${layer}: within twice the bound of XLA's ${kind} and bf16 dot (worst ${worstXla.toExponential(1)} of it)`,
          );
        });
      }
    }
    t.end();
  });
}

/** sum over k of |gate[r, k] up[r, k] w[layer, k, c]| for each output (r, c) of a gate | up input x [T, 2K]. */
function gateScale(x, w, T, K, N, layer) {
  const out = new Float64Array(T * N);
  for (let r = 0; r < T; r++)
    for (let k = 0; k < K; k++) {
      const gu = Math.abs(x[r * 2 * K + k] * x[r * 2 * K + K + k]);
      for (let c = 0; c < N; c++) out[r * N + c] += gu * Math.abs(w[(layer * K + k) * N + c]);
    }
  return out;
}

/** The largest |product| of output i's sum (row r, column c). */
function maxProduct(rows, w, T, K, N, layer, i) {
  const r = Math.floor(i / N);
  const c = i % N;
  let max = 0;
  for (let j = 0; j < K; j++) max = Math.max(max, Math.abs(rows[r * K + j] * w[(layer * K + j) * N + c]));
  return max;
}

/** The packed panels of stacked [Ly, K, N] weights by a plain loop: [l][j][p][c][e] = bits of w[l][2p + e][32j + c], 0 past K and N. */
function packByLoop(w, Ly, K, N) {
  const C = MATMUL_PANEL_COLUMNS;
  const panels = Math.ceil(N / C);
  const pairs = Math.ceil(K / 2);
  const out = new Uint16Array(Ly * panels * pairs * C * 2);
  let i = 0;
  for (let l = 0; l < Ly; l++)
    for (let j = 0; j < panels; j++)
      for (let p = 0; p < pairs; p++)
        for (let c = 0; c < C; c++)
          for (let e = 0; e < 2; e++) {
            const row = 2 * p + e;
            const col = j * C + c;
            out[i++] = row < K && col < N ? bf16Bits(w[(l * K + row) * N + col]) : 0;
          }
  return out;
}

for (const { t: T, k: K, n: N, layers: Ly } of SHAPES) {
  test(`packed weights [${Ly}x${K}x${N}]: the packing program lays out a JS loop's panels; the kernel on them gives what it gives on the stacked matrices, and the float64 loop's result`, async (t) => {
    const x = fill(T * K, T * 13 + K);
    const w = fill(Ly * K * N, N * 29 + Ly);
    const want = packByLoop(w, Ly, K, N);
    const dims = packedMatmulDims([Ly, K, N]);
    t.deepEqual(dims, [Ly, Math.ceil(N / 32), Math.ceil(K / 2), 32, 2], `packed dims [${dims.join(', ')}]`);
    for (const wType of ['f32', 'u16', 'bf16']) {
      const pack = buildProgram(`pack_test_${wType}_${Ly}_${K}_${N}`, (f) => ({
        packed: packMatmulWeights(f, f.param(new TensorType(wType, [Ly, K, N]), 'w')),
      }));
      const [got] = await runProgram(client, pack, [weightsAs(w, wType)]);
      let mismatches = 0;
      for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) mismatches++;
      t.equal(mismatches, 0, `${wType} weights: all ${want.length} packed values equal the loop's`);
      // The same panels from the rows a checkpoint stores ([Ly, N, K], what the load stacks by copies).
      const rows = new Float32Array(Ly * N * K);
      for (let l = 0; l < Ly; l++)
        for (let r = 0; r < K; r++) for (let c = 0; c < N; c++) rows[(l * N + c) * K + r] = w[(l * K + r) * N + c];
      const packRows = buildProgram(`pack_rows_test_${wType}_${Ly}_${K}_${N}`, (f) => ({
        packed: packMatmulRows(f, f.param(new TensorType(wType, [Ly, N, K]), 'w')),
      }));
      const [fromRows] = await runProgram(client, packRows, [weightsAs(rows, wType)]);
      let rowMismatches = 0;
      for (let i = 0; i < want.length; i++) if (fromRows[i] !== want[i]) rowMismatches++;
      t.equal(rowMismatches, 0, `${wType} rows [Ly, N, K]: all ${want.length} packed values equal the loop's`);
    }
    const packedProg = buildProgram(`matmul_kernel_packed_${T}_${K}_${N}_${Ly}`, (f) => {
      const xs = f.param(TensorType.f32([T, K]), 'x');
      const ws = f.param(new TensorType('u16', dims), 'w');
      return { y: matmulBf16Kernel(f, xs, ws, f.param(new TensorType('s32', []), 'layer'), undefined, N) };
    });
    const stackedProg = kernelProgram(T, K, N, Ly, 'u16');
    for (const [isa, path] of PATHS) {
      await withIsa(isa, async () => {
        for (const layer of [0, Ly - 1, Ly + 3]) {
          const [y] = await runProgram(client, packedProg, [x, want, Int32Array.of(layer)]);
          const [stacked] = await runProgram(client, stackedProg, [x, weightsAs(w, 'u16'), Int32Array.of(layer)]);
          t.ok(
            y.every((v, i) => Object.is(v, stacked[i])),
            `${path}, layer ${layer}: bit for bit the stacked matrices' result`,
          );
          const used = Math.min(layer, Ly - 1);
          const { out, scale } = reference(x, w, T, K, N, used);
          let worst = 0;
          for (let i = 0; i < out.length; i++)
            worst = Math.max(worst, Math.abs(y[i] - out[i]) / (scale[i] * K * 2 ** -24 + 1e-30));
          t.ok(
            worst <= 1,
            `${path}, layer ${layer}: |diff| <= K 2^-24 sum|products| of the float64 loop (worst ${worst.toFixed(3)} of it)`,
          );
        }
      });
    }
    t.end();
  });
}

test('packed weights with the RMSNorm, SwiGLU and GeGLU prologues: what the stacked matrices give, bit for bit', async (t) => {
  const [T, K, N, Ly] = [21, 96, 40, 2];
  const w = fill(Ly * K * N, 78);
  const norms = Float32Array.from(fill(Ly * K, 79), (v) => 1 + v / 4);
  for (const kind of ['rmsNorm', ...GATED]) {
    const x = fill(T * (GATED.includes(kind) ? 2 : 1) * K, 77);
    const program = (packed) =>
      buildProgram(`matmul_kernel_${kind}_${packed ? 'packed' : 'stacked'}`, (f) => {
        const xs = f.param(TensorType.f32([T, (GATED.includes(kind) ? 2 : 1) * K]), 'x');
        const ws = f.param(new TensorType('u16', packed ? packedMatmulDims([Ly, K, N]) : [Ly, K, N]), 'w');
        const ns = f.param(TensorType.f32([Ly, K]), 'norms');
        const prologue = kind === 'rmsNorm' ? { kind, weights: ns, eps: 1e-5 } : { kind };
        return {
          y: matmulBf16Kernel(f, xs, ws, f.param(new TensorType('s32', []), 'layer'), prologue, packed ? N : undefined),
        };
      });
    for (const layer of [0, 1]) {
      const [a] = await runProgram(client, program(true), [x, packByLoop(w, Ly, K, N), norms, Int32Array.of(layer)]);
      const [b] = await runProgram(client, program(false), [x, weightsAs(w, 'u16'), norms, Int32Array.of(layer)]);
      t.ok(
        a.every((v, i) => Object.is(v, b[i])),
        `${kind}, layer ${layer}: bit for bit`,
      );
    }
  }
  t.end();
});

test('malformed packed weights: the builder refuses them, and so does the handler', async (t) => {
  const build =
    (wDims, columns, xWidth = 6) =>
    () =>
      buildProgram('matmul_refused_packed', (f) => ({
        y: matmulBf16Kernel(
          f,
          f.param(TensorType.f32([2, xWidth]), 'x'),
          f.param(new TensorType('u16', wDims), 'w'),
          f.scalar(0, 's32'),
          undefined,
          columns,
        ),
      }));
  t.throws(build([1, 1, 3, 32, 2], undefined), /packed weights .* do not hold \[1, K, N\]/, 'no columns given');
  t.throws(build([1, 1, 3, 32, 2], 40), /do not hold/, 'columns past the panels');
  t.throws(build([1, 1, 4, 32, 2], 8), /do not hold/, 'pairs that do not match x');
  t.doesNotThrow(build([1, 1, 3, 32, 2], 8), 'the right dims');
  const f32Packed = () =>
    buildProgram('matmul_refused_packed', (f) => ({
      y: matmulBf16Kernel(
        f,
        f.param(TensorType.f32([2, 6]), 'x'),
        f.param(TensorType.f32([1, 1, 3, 32, 2]), 'w'),
        f.scalar(0, 's32'),
        undefined,
        8,
      ),
    }));
  t.throws(f32Packed, /packed \[Ly, N \/ 32, K \/ 2, 32, 2\] of u16 or bf16/, 'f32 panels');
  t.throws(
    () =>
      buildProgram('pack_refused', (f) => ({ y: packMatmulWeights(f, f.param(new TensorType('s8', [1, 4, 4]), 'w')) })),
    /packMatmulWeights: weights must be \[Ly, K, N\]/,
    'packing int8 weights',
  );
  t.throws(
    () =>
      buildProgram('pack_rows_refused', (f) => ({
        y: packMatmulRows(f, f.param(new TensorType('s8', [1, 4, 4]), 'w')),
      })),
    /packMatmulRows: weights must be \[Ly, N, K\]/,
    'packing int8 rows',
  );
  const bad = [
    ['panels of another width', [1, 1, 3, 16, 2], [2, 8], /packed weights \[1, 1, 3, 16, 2\] must be/],
    [
      'panels for other columns',
      [1, 1, 3, 32, 2],
      [2, 40],
      /must be \[Ly >= 1, ceil\(N \/ 32\), ceil\(K \/ 2\), 32, 2\] = \[Ly, 2, 3, 32, 2\]/,
    ],
    ['pairs for another K', [1, 1, 2, 32, 2], [2, 8], /= \[Ly, 1, 3, 32, 2\]/],
    ['no layers', [0, 1, 3, 32, 2], [2, 8], /Ly >= 1/],
  ];
  for (const [name, wDims, result, message] of bad) {
    const operands = (f) => [
      f.param(TensorType.f32([2, 6]), 'x'),
      f.param(new TensorType('u16', wDims), 'w'),
      f.param(new TensorType('s32', []), 'l'),
    ];
    await expectRefused(t, `packed ${name}`, MATMUL_BF16_TARGET, operands, result, message);
  }
  t.end();
});

/** out[t][n] = sum_k rows[t][k] * w[layer][k][n] in float64 (no rounding of the operands), and sum |products|. */
function referenceF32(rows, w, T, K, N, layer) {
  const out = new Float64Array(T * N);
  const scale = new Float64Array(T * N);
  for (let r = 0; r < T; r++) {
    for (let c = 0; c < N; c++) {
      let sum = 0;
      let abs = 0;
      for (let j = 0; j < K; j++) {
        const p = rows[r * K + j] * w[(layer * K + j) * N + c];
        sum += p;
        abs += Math.abs(p);
      }
      out[r * N + c] = sum;
      scale[r * N + c] = abs;
    }
  }
  return { out, scale };
}

for (const { t: T, k: K, n: N, layers: Ly } of SHAPES) {
  test(`f32 kernel [${T}x${K}]·[${Ly}x${K}x${N}], each prologue: the float64 loop on the f32 operands, every path; XLA's f32 program`, async (t) => {
    const w = fill(Ly * K * N, N * 7 + Ly);
    const norms = Float32Array.from(fill(Ly * K, K + 3), (v) => 1 + v / 4);
    const eps = 1e-5;
    for (const kind of ['none', 'rmsNorm', ...GATED]) {
      const width = (GATED.includes(kind) ? 2 : 1) * K;
      const x = fill(T * width, T * 5 + K + kind.length);
      const program = buildProgram(`matmul_f32_${kind}_${T}_${K}_${N}_${Ly}`, (f) => {
        const xs = f.param(TensorType.f32([T, width]), 'x');
        const ws = f.param(TensorType.f32([Ly, K, N]), 'w');
        const ns = f.param(TensorType.f32([Ly, K]), 'norms');
        const prologue = kind === 'rmsNorm' ? { kind, weights: ns, eps } : GATED.includes(kind) ? { kind } : undefined;
        return { y: matmulF32Kernel(f, xs, ws, f.param(new TensorType('s32', []), 'layer'), prologue) };
      });
      const xla = buildProgram(
        `xla_f32_${kind}_${T}_${K}_${N}_${Ly}`,
        (f) => {
          const xs = f.param(TensorType.f32([T, width]), 'x');
          const ws = f.param(TensorType.f32([Ly, K, N]), 'w');
          const ns = f.param(TensorType.f32([Ly, K]), 'norms');
          const layer = f.param(new TensorType('s32', []), 'layer');
          const w1 = f.reshape(f.dynamicSlice(ws, [layer, f.scalar(0, 's32'), f.scalar(0, 's32')], [1, K, N]), [K, N]);
          let input = xs;
          if (kind === 'rmsNorm')
            input = nn.rmsNorm(f, xs, f.reshape(f.dynamicSlice(ns, [layer, f.scalar(0, 's32')], [1, K]), [K]), eps);
          if (GATED.includes(kind)) input = xlaGated(f, kind, xs, T, K);
          return { y: f.matmul(input, w1) };
        },
        { dotPrecision: 'HIGHEST' },
      );
      for (const layer of [0, Ly - 1]) {
        const rows = kind === 'none' ? x : prologueRows(kind, x, T, K, norms.subarray(layer * K, (layer + 1) * K), eps);
        const { out, scale } = referenceF32(rows, w, T, K, N, layer);
        // An FMA chain of K products: K 2^-24 sum|products|; the prologue's rows in f32 (its sums of K squares,
        // its logistic) another K + 16 ulps of each product. GeGLU's activation in f32 is within 32 ulps of
        // |gate| (XLA's 0.5 g (1 + tanh(u)) loses 1 + tanh(u)'s digits where it cancels, to |gate| 2^-24).
        const gates = kind === 'geglu' ? gateScale(x, w, T, K, N, layer) : null;
        const bound = (i) =>
          (kind === 'none' ? K : 2 * K + 16) * 2 ** -24 * scale[i] + (gates ? 32 * 2 ** -24 * gates[i] : 0) + 1e-30;
        const [want] = await runProgram(client, xla, [x, w, norms, Int32Array.of(layer)]);
        for (const [isa, path] of F32_PATHS) {
          await withIsa(isa, async () => {
            t.equal(binding().matmulKernelPath('f32'), path, `the ${path} path`);
            const [got] = await runProgram(client, program, [x, w, norms, Int32Array.of(layer)]);
            let worst = 0;
            let worstXla = 0;
            for (let i = 0; i < out.length; i++) {
              worst = Math.max(worst, Math.abs(got[i] - out[i]) / bound(i));
              worstXla = Math.max(worstXla, Math.abs(got[i] - want[i]) / (2 * bound(i)));
            }
            t.ok(
              worst <= 1,
              `${kind}, ${path}, layer ${layer}: within the bound of the float64 loop (worst ${worst.toFixed(3)} of it)`,
            );
            t.ok(
              worstXla <= 1,
              `${kind}, ${path}, layer ${layer}: within twice the bound of XLA's f32 program (worst ${worstXla.toFixed(3)} of it)`,
            );
          });
        }
      }
    }
    t.end();
  });
}

/** The f32 kernel's panels by a JS loop: [Ly][ceil(N / 32)][K][32], w[l][k][32j + c] at [l][j][k][c], 0 past N. */
function packF32ByLoop(w, Ly, K, N) {
  const C = MATMUL_PANEL_COLUMNS;
  const panels = Math.ceil(N / C);
  const out = new Float32Array(Ly * panels * K * C);
  let i = 0;
  for (let l = 0; l < Ly; l++)
    for (let j = 0; j < panels; j++)
      for (let r = 0; r < K; r++)
        for (let c = 0; c < C; c++) {
          const col = j * C + c;
          out[i++] = col < N ? w[(l * K + r) * N + col] : 0;
        }
  return out;
}

for (const { t: T, k: K, n: N, layers: Ly } of SHAPES) {
  test(`f32 panels [${Ly}x${K}x${N}]: the packing programs (from [Ly, K, N] and from rows [Ly, N, K]) lay out a JS loop's panels; the f32 kernel on them gives, bit for bit, what it gives on the stacked matrices, each prologue, live rows and residual, every path`, async (t) => {
    const w = fill(Ly * K * N, N * 31 + K);
    const want = packF32ByLoop(w, Ly, K, N);
    const dims = packedMatmulDimsF32([Ly, K, N]);
    t.deepEqual(dims, [Ly, Math.ceil(N / 32), K, 32], `packed dims [${dims.join(', ')}]`);
    const rows = new Float32Array(Ly * N * K);
    for (let l = 0; l < Ly; l++)
      for (let r = 0; r < K; r++) for (let c = 0; c < N; c++) rows[(l * N + c) * K + r] = w[(l * K + r) * N + c];
    for (const [from, input, inDims, pack] of [
      ['[Ly, K, N]', w, [Ly, K, N], packMatmulWeights],
      ['rows [Ly, N, K]', rows, [Ly, N, K], packMatmulRows],
    ]) {
      const program = buildProgram(`pack_f32_${pack.name}_${Ly}_${K}_${N}`, (f) => ({
        packed: pack(f, f.param(TensorType.f32(inDims), 'w'), 'f32'),
      }));
      const [got] = await runProgram(client, program, [input]);
      let mismatches = 0;
      for (let i = 0; i < want.length; i++) if (!Object.is(got[i], want[i])) mismatches++;
      t.equal(mismatches, 0, `from ${from}: all ${want.length} packed values equal the loop's`);
    }
    const norms = Float32Array.from(fill(Ly * K, K + 5), (v) => 1 + v / 4);
    const live = Int32Array.from({ length: T }, (_, r) => (r % 5 === 2 ? 0 : 1));
    const residual = fill(T * N, T + N);
    for (const kind of ['none', 'rmsNorm', ...GATED]) {
      const width = (GATED.includes(kind) ? 2 : 1) * K;
      const x = fill(T * width, T * 3 + K + kind.length);
      const call = (packed) =>
        buildProgram(`matmul_f32_${packed ? 'packed' : 'stacked'}_${kind}_${T}_${K}_${N}_${Ly}`, (f) => {
          const xs = f.param(TensorType.f32([T, width]), 'x');
          const ws = f.param(TensorType.f32(packed ? dims : [Ly, K, N]), 'w');
          const ns = f.param(TensorType.f32([Ly, K]), 'norms');
          const lv = f.param(new TensorType('s32', [T]), 'live');
          const rs = f.param(TensorType.f32([T, N]), 'residual');
          const prologue =
            kind === 'rmsNorm' ? { kind, weights: ns, eps: 1e-5 } : GATED.includes(kind) ? { kind } : undefined;
          return {
            y: matmulF32Kernel(
              f,
              xs,
              ws,
              f.param(new TensorType('s32', []), 'layer'),
              prologue,
              { live: lv, residual: rs },
              packed ? N : undefined,
            ),
          };
        });
      const [packedProg, stackedProg] = [call(true), call(false)];
      for (const [isa, path] of F32_PATHS) {
        await withIsa(isa, async () => {
          for (const layer of [0, Ly - 1]) {
            const [y] = await runProgram(client, packedProg, [x, want, norms, live, residual, Int32Array.of(layer)]);
            const [stacked] = await runProgram(client, stackedProg, [
              x,
              w,
              norms,
              live,
              residual,
              Int32Array.of(layer),
            ]);
            t.ok(
              y.every((v, i) => Object.is(v, stacked[i])),
              `${kind}, ${path}, layer ${layer}: bit for bit the stacked matrices' result`,
            );
          }
        });
      }
    }
    t.end();
  });
}

for (const { t: T, k: K, n: N, layers: Ly } of SHAPES) {
  test(`bf16 pair panels into the f32 kernel [${Ly}x${K}x${N}]: it widens a JS loop's pair panels exactly, giving bit for bit what it gives on the f32 matrices of the same values, each prologue, live rows and residual, every path`, async (t) => {
    // Weights that bf16 holds exactly: the f32 matrices and the pairs carry the same values.
    const w = Float32Array.from(fill(Ly * K * N, N * 23 + K), (v) => fromBits(bf16Bits(v)));
    const pairs = packByLoop(w, Ly, K, N);
    const dims = packedMatmulDims([Ly, K, N]);
    const norms = Float32Array.from(fill(Ly * K, K + 9), (v) => 1 + v / 4);
    const live = Int32Array.from({ length: T }, (_, r) => (r % 5 === 1 ? 0 : 1));
    const residual = fill(T * N, T + N + 1);
    for (const wType of ['u16', 'bf16']) {
      for (const kind of ['none', 'rmsNorm', ...GATED]) {
        const width = (GATED.includes(kind) ? 2 : 1) * K;
        const x = fill(T * width, T * 5 + K + kind.length);
        const call = (packed) =>
          buildProgram(`matmul_f32_${packed ? `pairs_${wType}` : 'stacked'}_${kind}_${T}_${K}_${N}_${Ly}`, (f) => {
            const xs = f.param(TensorType.f32([T, width]), 'x');
            const ws = packed ? f.param(new TensorType(wType, dims), 'w') : f.param(TensorType.f32([Ly, K, N]), 'w');
            const ns = f.param(TensorType.f32([Ly, K]), 'norms');
            const lv = f.param(new TensorType('s32', [T]), 'live');
            const rs = f.param(TensorType.f32([T, N]), 'residual');
            const prologue =
              kind === 'rmsNorm' ? { kind, weights: ns, eps: 1e-5 } : GATED.includes(kind) ? { kind } : undefined;
            const layer = f.param(new TensorType('s32', []), 'layer');
            const rows = { live: lv, residual: rs };
            return { y: matmulF32Kernel(f, xs, ws, layer, prologue, rows, packed ? N : undefined) };
          });
        const [pairsProg, stackedProg] = [call(true), call(false)];
        for (const [isa, path] of F32_PATHS) {
          await withIsa(isa, async () => {
            for (const layer of [0, Ly - 1]) {
              const rest = [norms, live, residual, Int32Array.of(layer)];
              const [y] = await runProgram(client, pairsProg, [x, pairs, ...rest]);
              const [stacked] = await runProgram(client, stackedProg, [x, w, ...rest]);
              let mismatches = 0;
              for (let i = 0; i < y.length; i++) if (!Object.is(y[i], stacked[i])) mismatches++;
              t.equal(mismatches, 0, `${wType} pairs, ${kind}, ${path}, layer ${layer}: bit for bit the f32 matrices'`);
            }
          });
        }
      }
    }
    t.end();
  });
}

// Which rows are live: runs of padding inside and at both ends, padding then one long run (whole
// tiles of live rows at an offset), a lone live row, and none at all.
const LIVE_MASKS = [
  (T) => Int32Array.from({ length: T }, (_, r) => (r % 7 < 4 ? 1 : 0)),
  (T) => Int32Array.from({ length: T }, (_, r) => (r >= 5 ? 1 : 0)),
  (T) => Int32Array.from({ length: T }, (_, r) => (r === T - 1 ? 1 : 0)),
  (T) => new Int32Array(T),
];

test("live rows and the residual epilogue: each kernel and prologue skips the padding rows (product 0), the live rows bit for bit the full call's, plus the residual as one f32 add, every path; the f32 kernel past its depth block too", async (t) => {
  const [T, N, Ly] = [45, 80, 2];
  const residual = fill(T * N, 53);
  for (const [kernel, K] of [
    ['bf16', 70],
    ['f32', 70],
    ['f32', 4100],
  ]) {
    const w = fill(Ly * K * N, 41);
    const norms = Float32Array.from(fill(Ly * K, 43), (v) => 1 + v / 4);
    for (const kind of ['none', 'rmsNorm', ...GATED]) {
      const width = (GATED.includes(kind) ? 2 : 1) * K;
      const x = fill(T * width, 47 + kind.length);
      // The full call (every row, no residual), and the call with live rows, with or without the residual.
      const program = (withLive, withResidual) =>
        buildProgram(`matmul_live_${kernel}_${K}_${kind}_${withLive}_${withResidual}`, (f) => {
          const xs = f.param(TensorType.f32([T, width]), 'x');
          const ws = f.param(TensorType.f32([Ly, K, N]), 'w');
          const ns = f.param(TensorType.f32([Ly, K]), 'norms');
          const layer = f.param(new TensorType('s32', []), 'layer');
          const liveParam = f.param(new TensorType('s32', [T]), 'live');
          const residualParam = f.param(TensorType.f32([T, N]), 'residual');
          const prologue =
            kind === 'rmsNorm' ? { kind, weights: ns, eps: 1e-5 } : GATED.includes(kind) ? { kind } : undefined;
          const rows = { live: withLive ? liveParam : undefined, residual: withResidual ? residualParam : undefined };
          const y =
            kernel === 'bf16'
              ? matmulBf16Kernel(f, xs, ws, layer, prologue, undefined, rows)
              : matmulF32Kernel(f, xs, ws, layer, prologue, rows);
          return { y };
        });
      const full = program(false, false);
      const variants = [
        ['live rows', program(true, false), false],
        ['live rows and the residual', program(true, true), true],
      ];
      for (const [isa, path] of kernel === 'bf16' ? PATHS : F32_PATHS) {
        await withIsa(isa, async () => {
          for (const mask of LIVE_MASKS) {
            const live = mask(T);
            const count = live.reduce((a, b) => a + b, 0);
            const inputs = [x, w, norms, Int32Array.of(1), live, residual];
            const [want] = await runProgram(client, full, inputs);
            for (const [what, skipping, added] of variants) {
              const [got] = await runProgram(client, skipping, inputs);
              let liveSame = true;
              let deadSame = true;
              for (let r = 0; r < T; r++) {
                for (let c = 0; c < N; c++) {
                  const i = r * N + c;
                  if (live[r]) liveSame &&= Object.is(got[i], added ? Math.fround(residual[i] + want[i]) : want[i]);
                  else deadSame &&= got[i] === (added ? residual[i] : 0);
                }
              }
              const label = `${kernel} K ${K} ${kind}, ${path}, ${what}, ${count} of ${T} rows live`;
              if (count > 0)
                t.ok(liveSame, `${label}: the live rows bit for bit${added ? ' (plus the residual)' : ''}`);
              t.ok(deadSame, `${label}: the padding rows ${added ? 'the residual' : '0'}`);
            }
          }
        });
      }
    }
  }
  t.throws(
    () =>
      buildProgram('matmul_live_refused', (f) => ({
        y: matmulBf16Kernel(
          f,
          f.param(TensorType.f32([3, 4]), 'x'),
          f.param(TensorType.f32([1, 4, 8]), 'w'),
          f.scalar(0, 's32'),
          undefined,
          undefined,
          { live: f.param(new TensorType('s32', [4]), 'r') },
        ),
      })),
    /live rows must be s32 \[3\] for x tensor<3x4xf32>, got tensor<4xi32>/,
    'the builder refuses live rows of another length',
  );
  t.throws(
    () =>
      buildProgram('matmul_residual_refused', (f) => ({
        y: matmulF32Kernel(
          f,
          f.param(TensorType.f32([3, 4]), 'x'),
          f.param(TensorType.f32([1, 4, 8]), 'w'),
          f.scalar(0, 's32'),
          undefined,
          { residual: f.param(TensorType.f32([3, 7]), 'r') },
        ),
      })),
    /the residual must be f32 \[3, 8\] \(the result's shape\), got tensor<3x7xf32>/,
    'the builder refuses a residual of another shape',
  );
  t.end();
});

test('the f32 kernel refuses what it does not take: the builder, and the handler', async (t) => {
  const build = (wType, wDims) => () =>
    buildProgram('matmul_f32_refused', (f) => ({
      y: matmulF32Kernel(
        f,
        f.param(TensorType.f32([2, 4]), 'x'),
        f.param(new TensorType(wType, wDims), 'w'),
        f.scalar(0, 's32'),
      ),
    }));
  t.throws(build('u16', [1, 4, 3]), /matmulF32Kernel: weights must be f32 \[Ly, K, N\]/, 'bf16 bits');
  t.throws(
    build('f32', [1, 1, 4, 32]),
    /matmulF32Kernel: packed weights .* do not hold \[1, 4, N\] for x .* and no columns/,
    'packed panels without their columns',
  );
  t.throws(
    () =>
      buildProgram('matmul_f32_packed_refused', (f) => ({
        y: matmulF32Kernel(
          f,
          f.param(TensorType.f32([2, 4]), 'x'),
          f.param(TensorType.f32([1, 2, 4, 32]), 'w'),
          f.scalar(0, 's32'),
          undefined,
          {},
          20,
        ),
      })),
    /matmulF32Kernel: packed weights .* do not hold \[1, 4, N\] for x .* and 20 columns/,
    'packed panels that do not hold the columns',
  );
  t.throws(build('f32', [1, 5, 3]), /x must be f32 \[T, 5\]/, 'a K that does not match x');
  t.throws(
    () =>
      buildProgram('matmul_f32_pairs_refused', (f) => ({
        y: matmulF32Kernel(
          f,
          f.param(TensorType.f32([2, 6]), 'x'),
          f.param(new TensorType('u16', [1, 1, 2, 32, 2]), 'w'),
          f.scalar(0, 's32'),
          undefined,
          {},
          8,
        ),
      })),
    /matmulF32Kernel: packed weights .* do not hold \[1, K, N\] for x tensor<2x6xf32> and 8 columns/,
    "bf16 pairs that do not hold x's K",
  );
  const bad = [
    ['bf16 bits not packed', 'u16', [1, 6, 8], /weights must have rank 5, got 3/],
    [
      'bf16 pairs of another K',
      'u16',
      [1, 1, 2, 32, 2],
      /packed weights .* must be \[Ly >= 1, ceil\(N \/ 32\), ceil\(K \/ 2\), 32, 2\] = \[Ly, 1, 3, 32, 2\]/,
    ],
    ['f32 of rank 5', 'f32', [1, 1, 3, 32, 2], /weights must have rank 3, got 5/],
    [
      'f32 panels of another K',
      'f32',
      [1, 1, 3, 32],
      /packed f32 weights .* must be \[Ly >= 1, ceil\(N \/ 32\), K, 32\] = \[Ly, 1, 6, 32\]/,
    ],
  ];
  for (const [name, wType, wDims, message] of bad) {
    const operands = (f) => [
      f.param(TensorType.f32([2, 6]), 'x'),
      f.param(new TensorType(wType, wDims), 'w'),
      f.param(new TensorType('s32', []), 'l'),
    ];
    await expectRefused(t, `f32 ${name}`, MATMUL_F32_TARGET, operands, [2, 8], message);
  }
  t.end();
});

test("a malformed call is the handler's error, and the process lives", async (t) => {
  const bad = [
    [
      'two operands',
      (f) => [f.param(TensorType.f32([4, 6]), 'x'), f.param(TensorType.f32([1, 6, 8]), 'w')],
      [4, 8],
      /expects 3 to 5 operands/,
    ],
    [
      's32 weights',
      (f) => [
        f.param(TensorType.f32([4, 6]), 'x'),
        f.param(new TensorType('s32', [1, 6, 8]), 'w'),
        f.param(new TensorType('s32', []), 'l'),
      ],
      [4, 8],
      /weights must be f32/,
    ],
    [
      'K that does not match',
      (f) => [
        f.param(TensorType.f32([4, 6]), 'x'),
        f.param(TensorType.f32([1, 5, 8]), 'w'),
        f.param(new TensorType('s32', []), 'l'),
      ],
      [4, 8],
      /must be \[Ly >= 1, K, N\] with K = 6/,
    ],
    [
      'a result of the wrong shape',
      (f) => [
        f.param(TensorType.f32([4, 6]), 'x'),
        f.param(TensorType.f32([1, 6, 8]), 'w'),
        f.param(new TensorType('s32', []), 'l'),
      ],
      [4, 9],
      /result \[4, 9\] must be \[T, N\] = \[4, 8\]/,
    ],
    [
      'no layers',
      (f) => [
        f.param(TensorType.f32([4, 6]), 'x'),
        f.param(TensorType.f32([0, 6, 8]), 'w'),
        f.param(new TensorType('s32', []), 'l'),
      ],
      [4, 8],
      /Ly >= 1/,
    ],
    [
      'RMSNorm without its eps',
      (f) => [
        f.param(TensorType.f32([4, 6]), 'x'),
        f.param(TensorType.f32([1, 6]), 'n'),
        f.param(TensorType.f32([1, 6, 8]), 'w'),
        f.param(new TensorType('s32', []), 'l'),
      ],
      [4, 8],
      /expects 5 to 7 operands \(x, norm weights, eps, weights, layer, then optionally the live rows s32 \[T\] and the residual f32 \[T, N\]\)/,
      MATMUL_BF16_RMSNORM_TARGET,
    ],
    [
      'live rows of another length',
      (f) => [
        f.param(TensorType.f32([4, 6]), 'x'),
        f.param(TensorType.f32([1, 6, 8]), 'w'),
        f.param(new TensorType('s32', []), 'l'),
        f.param(new TensorType('s32', [5]), 'r'),
      ],
      [4, 8],
      /live rows \[5\] must be \[T\] = \[4\]/,
    ],
    [
      'a residual of rank 1',
      (f) => [
        f.param(TensorType.f32([4, 6]), 'x'),
        f.param(TensorType.f32([1, 6, 8]), 'w'),
        f.param(new TensorType('s32', []), 'l'),
        f.param(TensorType.f32([4]), 'r'),
      ],
      [4, 8],
      /residual must have rank 2, got 1/,
      MATMUL_F32_TARGET,
    ],
    [
      'a residual of another shape',
      (f) => [
        f.param(TensorType.f32([4, 6]), 'x'),
        f.param(TensorType.f32([1, 6, 8]), 'w'),
        f.param(new TensorType('s32', []), 'l'),
        f.param(new TensorType('s32', [4]), 'r'),
        f.param(TensorType.f32([4, 9]), 'res'),
      ],
      [4, 8],
      /residual \[4, 9\] must be the result's shape \[4, 8\]/,
    ],
    [
      'the residual before the live rows',
      (f) => [
        f.param(TensorType.f32([4, 6]), 'x'),
        f.param(TensorType.f32([1, 6, 8]), 'w'),
        f.param(new TensorType('s32', []), 'l'),
        f.param(TensorType.f32([4, 8]), 'res'),
        f.param(new TensorType('s32', [4]), 'r'),
      ],
      [4, 8],
      /the live rows \(s32\) before the residual \(f32\)/,
    ],
    [
      'RMSNorm weights of another layer count',
      (f) => [
        f.param(TensorType.f32([4, 6]), 'x'),
        f.param(TensorType.f32([2, 6]), 'n'),
        f.param(TensorType.f32([]), 'e'),
        f.param(TensorType.f32([1, 6, 8]), 'w'),
        f.param(new TensorType('s32', []), 'l'),
      ],
      [4, 8],
      /norm weights \[2, 6\] must be \[Ly, K\] = \[1, 6\]/,
      MATMUL_BF16_RMSNORM_TARGET,
    ],
    [
      'SwiGLU of x without gate | up',
      (f) => [
        f.param(TensorType.f32([4, 6]), 'x'),
        f.param(TensorType.f32([1, 6, 8]), 'w'),
        f.param(new TensorType('s32', []), 'l'),
      ],
      [4, 8],
      /with 2K = 6 of x \[4, 6\]/,
      MATMUL_BF16_SWIGLU_TARGET,
    ],
  ];
  for (const [name, operands, result, message, target = MATMUL_BF16_TARGET] of bad)
    await expectRefused(t, name, target, operands, result, message);
  t.end();
});

test('the builder refuses operands the kernel does not take, before anything runs', (t) => {
  const build = (xType, wType, wDims) => () =>
    buildProgram('matmul_refused', (f) => ({
      y: matmulBf16Kernel(
        f,
        f.param(new TensorType(xType, [2, 4]), 'x'),
        f.param(new TensorType(wType, wDims), 'w'),
        f.scalar(0, 's32'),
      ),
    }));
  t.throws(build('bf16', 'f32', [1, 4, 3]), /x must be f32 \[T, 4\]/, 'a bf16 x');
  t.throws(build('f32', 's8', [1, 4, 3]), /weights must be \[Ly, K, N\] of f32, u16 or bf16/, 'int8 weights');
  t.throws(build('f32', 'f32', [4, 3]), /weights must be \[Ly, K, N\]/, 'an unstacked matrix');
  const swiglu = () =>
    buildProgram('matmul_refused', (f) => ({
      y: matmulBf16Kernel(
        f,
        f.param(TensorType.f32([2, 4]), 'x'),
        f.param(TensorType.f32([1, 4, 3]), 'w'),
        f.scalar(0, 's32'),
        { kind: 'swiglu' },
      ),
    }));
  t.throws(swiglu, /x must be f32 \[T, 8\] \(gate \| up\)/, 'SwiGLU of an input that is not gate | up');
  const norm = (dims, eps) => () =>
    buildProgram('matmul_refused', (f) => ({
      y: matmulBf16Kernel(
        f,
        f.param(TensorType.f32([2, 4]), 'x'),
        f.param(TensorType.f32([2, 4, 3]), 'w'),
        f.scalar(0, 's32'),
        { kind: 'rmsNorm', weights: f.param(TensorType.f32(dims), 'n'), eps },
      ),
    }));
  t.throws(norm([4], 1e-5), /RMSNorm weights must be f32 \[2, 4\]/, 'norm weights not stacked like the matrix');
  t.throws(norm([2, 4], -1), /eps must be a non-negative number/, 'a negative eps');
  t.end();
});

test("the Scorer: the projections through the kernels (bf16 dots, true f32 dots) where the facts say so; scores within the gate of f32 and close to XLA's dots", async (t) => {
  const ENV = 'PJRT_SCORE_PLATFORM_FACTS';
  const weightBytes = new Map();
  const load = async (facts, precision) => {
    if (facts) process.env[ENV] = JSON.stringify(facts);
    let loaded;
    try {
      const scorer = await Scorer.load({
        diskCache: false,
        precision,
        log: (e) => e.event === 'model_loaded' && (loaded = e),
      });
      weightBytes.set(scorer, loaded.weightBytes);
      return scorer;
    } finally {
      delete process.env[ENV];
    }
  };
  const byDefault = await load(null, 'bf16');
  const xla = await load({ matmulKernel: false }, 'bf16');
  const highest = await load(null, 'highest');
  const highestXla = await load({ matmulKernelF32: false }, 'highest');
  const items = [
    'Blue.',
    'Green, like grass.',
    'The sky is blue on a clear day because of Rayleigh scattering.',
    'Red.',
    'It depends on the weather and the time of the day.',
  ];
  const request = {
    query: 'Question: which colour is the sky on a clear day? Answer:',
    items,
    labelTokenIds: [9805, 787],
    applySoftmax: true,
  };
  const e = byDefault.explain(request);
  // The platform facts take it on the measured class only: AVX-512 BF16 (on AMX CPUs XLA's dots run on the tiles).
  const taken = e.attentionKernel.tried === 'avx512bf16' && e.attentionKernel.allowed === 'avx512bf16';
  t.equal(
    e.bf16.matmulKernel,
    taken,
    `explain(): matmulKernel ${e.bf16.matmulKernel} on this ${cpuIsa} CPU (kernels tried ${e.attentionKernel.tried})`,
  );
  t.deepEqual(
    e.bf16.packedMatrices,
    taken ? ['wQkv', 'wGateUp', 'wO', 'wDown'] : [],
    `explain(): the matrices packed for it: ${e.bf16.packedMatrices.join(', ') || 'none'}`,
  );
  // The four layer matrices as bf16 panels: 2 bytes an element where f32 weights hold 4 (the padding is 0 for this model's sizes).
  const c = byDefault.config;
  const layerElements =
    c.numLayers *
    c.hiddenSize *
    ((c.numHeads + 2 * c.numKvHeads) * c.headDim + c.numHeads * c.headDim + 3 * c.intermediateSize);
  t.equal(
    weightBytes.get(highest) - weightBytes.get(byDefault),
    taken ? 2 * layerElements : 0,
    `the weights on the device: ${taken ? `${((2 * layerElements) / 2 ** 20).toFixed(1)} MiB fewer than f32's` : 'as f32'}`,
  );
  t.equal(
    xla.explain(request).bf16.matmulKernel,
    false,
    'PJRT_SCORE_PLATFORM_FACTS {"matmulKernel":false} turns it off',
  );
  t.deepEqual(xla.explain(request).bf16.overridden, ['matmulKernel'], 'and says the fact was set');
  t.equal(highest.explain(request).bf16.matmulKernel, false, 'never under true f32 dots');
  t.deepEqual(
    [xla, highest].map((s) => s.explain(request).bf16.packedMatrices),
    [[], []],
    'and without it no matrix is packed',
  );
  // The f32 kernel: the facts of this CPU's class and vendor take it or not (AVX-512 BF16 CPUs without AMX:
  // taken, platform/profiles.ts), where AVX-512 may run.
  const { platformFacts } = require('../dist/scoring/platform');
  const { hostCpu } = require('../dist/runtime/host-cpu');
  const takenF32 = taken && platformFacts('cpu', e.attentionKernel.tried, hostCpu().vendor ?? null).matmulKernelF32;
  t.deepEqual(
    [byDefault, xla, highest, highestXla].map((s) => s.explain(request).matmulKernel),
    [taken ? 'bf16' : null, null, takenF32 ? 'f32' : null, null],
    `explain().matmulKernel: bf16 under bf16 dots, ${takenF32 ? 'f32' : "XLA's dots"} under true f32 dots on this ${hostCpu().vendor ?? ''} ${cpuIsa} CPU, none where the variable turns them off`,
  );
  for (const algorithm of ['serial', 'packed', 'prefix']) {
    const [k, x, h] = await Promise.all([byDefault, xla, highest].map((s) => s.score({ ...request, algorithm })));
    const diffs = (a, b) => a.scores.flatMap((row, i) => row.map((v, j) => Math.abs(v - b.scores[i][j])));
    const toF32 = diffs(k, h);
    const max = Math.max(...toF32);
    const mean = toF32.reduce((s, d) => s + d, 0) / toF32.length;
    t.ok(
      max <= 0.02 && mean <= 0.01,
      `${algorithm}: against true f32 max ${max.toExponential(2)} <= 0.02, mean ${mean.toExponential(2)} <= 0.01`,
    );
    // Two bf16 computations whose roundings differ where the norms' f32 sums do (the prologue's order against
    // XLA's): each within the gate of f32, so within twice the gate's max of each other.
    const toXla = Math.max(...diffs(k, x));
    t.ok(toXla <= 0.04, `${algorithm}: against XLA's bf16 dots max ${toXla.toExponential(2)} <= 0.04`);
    // True f32 both: the same products summed in other orders over 30 layers.
    const f32Xla = await highestXla.score({ ...request, algorithm });
    const toF32Xla = Math.max(...diffs(h, f32Xla));
    t.ok(
      toF32Xla <= 1e-4,
      `${algorithm}: true f32 ${takenF32 ? 'through the f32 kernel' : ''} against XLA's f32 dots max ${toF32Xla.toExponential(2)} <= 1e-4`,
    );
  }
  for (const s of [byDefault, xla, highest, highestXla]) s.dispose();
  t.end();
});

test("the Scorer through the f32 kernel on its packed panels (the fact set on any CPU whose AVX-512 may run): XLA's f32 dots' scores within 1e-4", async (t) => {
  const ENV = 'PJRT_SCORE_PLATFORM_FACTS';
  const load = async (facts) => {
    process.env[ENV] = JSON.stringify(facts);
    try {
      return await Scorer.load({ diskCache: false, precision: 'highest' });
    } finally {
      delete process.env[ENV];
    }
  };
  const [kernel, xla] = [await load({ matmulKernelF32: true }), await load({ matmulKernelF32: false })];
  const request = {
    query: 'Question: which colour is the sky on a clear day? Answer:',
    items: ['Blue.', 'Green, like grass.', 'It depends on the weather and the time of the day.'],
    labelTokenIds: [9805, 787],
    applySoftmax: false,
  };
  const e = kernel.explain(request);
  const allowed = ['avx512', 'avx512bf16', 'amx'].includes(e.attentionKernel?.allowed);
  t.equal(
    e.matmulKernel,
    allowed ? 'f32' : null,
    `explain().matmulKernel: ${allowed ? 'the f32 kernel where AVX-512 may run' : 'none without AVX-512'} (${cpuIsa}, allowed ${e.attentionKernel?.allowed})`,
  );
  for (const algorithm of ['serial', 'packed', 'prefix']) {
    const [k, x] = await Promise.all([kernel, xla].map((s) => s.score({ ...request, algorithm })));
    const worst = Math.max(...k.scores.flatMap((row, i) => row.map((v, j) => Math.abs(v - x.scores[i][j]))));
    t.ok(worst <= 1e-4, `${algorithm}: against XLA's f32 dots max ${worst.toExponential(2)} <= 1e-4`);
  }
  for (const s of [kernel, xla]) s.dispose();
  t.end();
});

test("the load's packed matrices: a bf16 checkpoint's rows stacked by copies and packed on the device are the JS loop's panels of the transposed stack, whole and layer by layer", async (t) => {
  const fs = require('node:fs');
  const os = require('node:os');
  const path = require('node:path');
  const { makeTinyModel, writeTinyHfDir } = require('./helpers/tiny-model');
  const { loadModel } = require('../dist/model');
  const { uploadWeights, deviceArray } = require('../dist/device-weights');
  const { decoderWeightSpecs } = require('../dist/hlo');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-packed-rows-'));
  try {
    writeTinyHfDir(makeTinyModel('qwen3', 5), dir, { dtype: 'BF16' });
    const model = loadModel(dir);
    const packed = ['wQkv', 'wGateUp', 'wO', 'wDown'];
    const specs = decoderWeightSpecs(model.config, 'bf16', 'u16', packed);
    const plain = new Map(decoderWeightSpecs(model.config, 'bf16', 'u16').map((spec) => [spec.name, spec]));
    for (const assembleBytes of [undefined, 1]) {
      const weights = await uploadWeights(client, model.config, model.weights, 'bf16', {
        packed,
        ...(assembleBytes ? { assembleBytes } : {}),
      });
      try {
        for (const name of packed) {
          const i = specs.findIndex((spec) => spec.name === name);
          // The independent path: the transposing host builder's [Ly, K, N] bits, packed by the loop.
          const stacked = deviceArray(plain.get(name), model.weights, 'bf16').data;
          const [Ly, K, N] = plain.get(name).dims;
          const want = packByLoop(Float32Array.from(stacked, fromBits), Ly, K, N);
          const got = await weights.buffers[i].toHost();
          let mismatches = 0;
          for (let j = 0; j < want.length; j++) if (got[j] !== want[j]) mismatches++;
          t.equal(
            mismatches,
            0,
            `${name} [${Ly}, ${K}, ${N}]${assembleBytes ? ', layer by layer' : ''}: all ${want.length} packed values equal the loop's`,
          );
        }
      } finally {
        weights.dispose();
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('teardown', (t) => {
  client.dispose();
  t.end();
});
