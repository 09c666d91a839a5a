'use strict';
// The addon's custom calls: the attention kernels (native/kernels/prefix_attention_ffi.cc:
// the prefix target, the causal one when the first byte is odd, and their bf16
// variants when its bit 1 is set) and, when its bit 2 is set, the projections'
// matmul kernel (native/kernels/matmul_bf16_ffi.cc: plain, with the RMSNorm or
// SwiGLU prologue, or plain on bf16 bits typed u16, by its two low bits; with
// bit 3 set, on weights packed as the load packs them: u16 panels; with bit 4
// set, the f32 kernel's plain, RMSNorm or SwiGLU target on f32 weights; with bit 7 set, GeGLU in
// place of SwiGLU; with bit 5 set, with the live rows operand, its flags from the input's
// lengths); with bit 6 set (bit 2 clear), the packed
// pass's joined attention target (prefix_attention_ffi.h: query and items in one call), and with
// bit 7 set too, its rotating variant on the q | k | v projection:
// operand shapes, element types and counts decoded
// from the input, consistent or broken one piece at a time, lengths anywhere
// in s32, and the kernel's instruction-set cap (PJRT_SCORE_KERNEL_ISA, read at
// each call: every dispatch path the CPU has, and a bad value), through a real
// compile and execute on the CPU plugin. The handler must refuse a broken call
// with its clear error; an accepted call must give finite outputs.
const path = require('node:path');
const { DIST, reader, scriptsUnder } = require('./common');
const { sharedClient, expected: runtimeExpected } = require('./native');

const { buildProgram, TensorType, HloBuildError } = require(path.join(DIST, 'hlo'));
let client = null;

async function setup() {
  client = await sharedClient();
}

const PREFIX = 'pjrt_score_prefix_attention';
const CAUSAL = 'pjrt_score_causal_attention';
const QUERY_ITEMS = 'pjrt_score_query_items_attention';
const QUERY_ITEMS_ROPE = 'pjrt_score_query_items_attention_rope';
const MATMUL = [
  'pjrt_score_matmul_bf16',
  'pjrt_score_matmul_bf16_rmsnorm',
  'pjrt_score_matmul_bf16_swiglu',
  'pjrt_score_matmul_bf16',
];
const MATMUL_F32 = [
  'pjrt_score_matmul_f32',
  'pjrt_score_matmul_f32_rmsnorm',
  'pjrt_score_matmul_f32_swiglu',
  'pjrt_score_matmul_f32',
];
// Form 2 (a gate | up input) with GeGLU instead of SwiGLU: bit 128 of the first byte.
const MATMUL_GEGLU = { bf16: 'pjrt_score_matmul_bf16_geglu', f32: 'pjrt_score_matmul_f32_geglu' };
// '' leaves the variable unset; a cap above the CPU's best, or an unknown one, must change nothing.
const ISA_CAPS = ['', 'portable', 'avx2', 'avx512', 'avx512bf16', 'amx', 'sse9'];

// The well-formed operands of each target, then the result.
function wellFormed(causal, next) {
  const [n, l, hkv, group, d, p] = [
    next() % 5,
    next() % 6,
    1 + (next() % 3),
    1 + (next() % 3),
    next() % 20,
    next() % 300,
  ];
  const hq = hkv * group;
  if (causal) {
    const t = p * 2; // up to 598 rows: three key blocks of 256
    return [
      ['f32', [t, hq, d]],
      ['f32', [t, hkv, d]],
      ['f32', [t, hkv, d]],
      ['s32', []],
      ['f32', [t, hq, d]],
    ];
  }
  return [
    ['f32', [n, l, hq, d]],
    ['f32', [n, l, hkv, d]],
    ['f32', [n, l, hkv, d]],
    ['s32', [n]],
    ['f32', [p, hkv, d]],
    ['f32', [p, hkv, d]],
    ['s32', []],
    ['f32', [n, l, hq, d]], // the result
  ];
}

// The joined attention call's well-formed operands (the query's q, k, v, length; the items' q, k, v,
// lengths), then the result.
function wellFormedJoined(next) {
  const [n, l, hkv, group, d, p] = [
    next() % 5,
    next() % 6,
    1 + (next() % 3),
    1 + (next() % 3),
    next() % 20,
    next() % 300,
  ];
  const hq = hkv * group;
  return [
    ['f32', [p, hq, d]],
    ['f32', [p, hkv, d]],
    ['f32', [p, hkv, d]],
    ['s32', []],
    ['f32', [n, l, hq, d]],
    ['f32', [n, l, hkv, d]],
    ['f32', [n, l, hkv, d]],
    ['s32', [n]],
    ['f32', [p + n * l, hq, d]], // the result
  ];
}

// The rotating joined call's well-formed operands (qkv, the query's and the items' cos and sin, the
// score scale, the lengths), then the result.
function wellFormedRope(next) {
  const [n, l, hkv, group, half, p] = [
    next() % 5,
    next() % 6,
    1 + (next() % 3),
    1 + (next() % 3),
    next() % 12,
    next() % 300,
  ];
  const [hq, d] = [hkv * group, 2 * half];
  const t = p + n * l;
  return [
    ['f32', [t, (hq + 2 * hkv) * d]],
    ['f32', [p, half]],
    ['f32', [p, half]],
    ['f32', [n, l, half]],
    ['f32', [n, l, half]],
    ['f32', []],
    ['s32', []],
    ['s32', [n]],
    ['f32', [t, hq, d]], // the result
  ];
}

// The matmul kernel's well-formed operands (x, [norm weights, eps,] weights, layer, [live rows]), then the result.
function wellFormedMatmul(form, packed, f32, live, next) {
  const [t, k, n, layers] = [next() % 40, 1 + (next() % 80), next() % 70, 1 + (next() % 3)];
  const x = ['f32', [t, form === 2 ? 2 * k : k]];
  const weights = f32
    ? ['f32', [layers, k, n]]
    : packed
      ? ['u16', [layers, Math.ceil(n / 32), Math.ceil(k / 2), 32, 2]]
      : [form === 3 ? 'u16' : 'f32', [layers, k, n]];
  const norms =
    form === 1
      ? [
          ['f32', [layers, k]],
          ['f32', []],
        ]
      : [];
  return [x, ...norms, weights, ['s32', []], ...(live ? [['s32', [t]]] : []), ['f32', [t, n]]];
}

function decode(data) {
  const next = reader(data);
  const first = next();
  const matmul = (first & 4) === 4;
  const causal = (first & 1) === 1;
  const f32 = (first & 16) === 16;
  const joined = !matmul && (first & 64) === 64;
  const rope = joined && (first & 128) === 128;
  const target = matmul
    ? (first & 3) === 2 && (first & 128) === 128
      ? MATMUL_GEGLU[f32 ? 'f32' : 'bf16']
      : (f32 ? MATMUL_F32 : MATMUL)[first & 3]
    : (rope ? QUERY_ITEMS_ROPE : joined ? QUERY_ITEMS : causal ? CAUSAL : PREFIX) + (first & 2 ? '_bf16' : '');
  const ops = matmul
    ? wellFormedMatmul(first & 3, (first & 8) === 8, f32, (first & 32) === 32, next)
    : rope
      ? wellFormedRope(next)
      : joined
        ? wellFormedJoined(next)
        : wellFormed(causal, next);
  const arity = ops.length - 1;
  const broken = next() % 4;
  for (let i = 0; i < broken; i++) {
    const at = next() % ops.length;
    const how = next() % 4;
    const [dtype, dims] = ops[at];
    if (how === 0)
      ops[at] = [dtype === 'f32' ? 's32' : 'f32', dims]; // u16 weights become f32
    else if (how === 1 && dims.length) ops[at] = [dtype, dims.slice(1)];
    else if (how === 2) ops[at] = [dtype, [...dims, 1 + (next() % 3)]];
    else if (dims.length) ops[at] = [dtype, dims.map((x, j) => (j === next() % dims.length ? next() % 8 : x))];
  }
  // Operand count: mostly the one the handler takes.
  const count = next() < 220 ? arity : next() % 10;
  const lengths = Array.from({ length: 8 }, () => ((next() << 24) | (next() << 16)) >> 16);
  const isa = ISA_CAPS[next() % ISA_CAPS.length];
  return {
    target,
    operands: ops
      .slice(0, Math.min(count, arity))
      .concat(count > arity ? Array.from({ length: count - arity }, () => ops[0]) : []),
    result: ops[arity],
    lengths,
    isa,
  };
}

function fill([dtype, dims], lengths) {
  const size = dims.reduce((a, b) => a * b, 1);
  if (dtype === 's32') return Int32Array.from({ length: size }, (_, i) => lengths[i % lengths.length]);
  // bf16 bits of values in [-1, 1]; f32 values never all 0 (an RMSNorm's eps and rows stay positive).
  if (dtype === 'u16') return Uint16Array.from({ length: size }, (_, i) => (i % 2 ? 0xbf00 : 0x3f00) + (i % 97));
  return Float32Array.from({ length: size }, (_, i) => Math.sin(i * 0.7 + 0.5));
}

async function run(data) {
  const { target, operands, result, lengths, isa } = decode(data);
  // Inputs run one at a time, so no kernel call reads the variable while it changes.
  if (isa) process.env.PJRT_SCORE_KERNEL_ISA = isa;
  else delete process.env.PJRT_SCORE_KERNEL_ISA;
  const prog = buildProgram('fuzz_ffi', (f) => {
    const params = operands.map(([dtype, dims], i) => f.param(new TensorType(dtype, dims), `x${i}`));
    return { out: f.customCall(target, params, [new TensorType(result[0], result[1])])[0] };
  });
  const exe = await client.compile(prog.text);
  const buffers = [];
  try {
    for (const op of operands) buffers.push(await client.upload(fill(op, lengths), op[1], op[0]));
    const [out] = await exe.execute(buffers);
    const host = await out.toHost();
    out.dispose();
    if (!host.every(Number.isFinite))
      throw new Error(
        `an accepted ${target} call gave a non-finite output (${JSON.stringify(operands.map((o) => o[1]))})`,
      );
  } finally {
    buffers.forEach((b) => b.dispose());
    exe.dispose();
  }
}

function expected(error) {
  return error instanceof HloBuildError || runtimeExpected(error);
}

module.exports = {
  name: 'native-ffi',
  smokeExecs: 200,
  maxLength: 64,
  timeoutMs: 60_000,
  scripts: scriptsUnder('dist/runtime/', 'dist/hlo/'),
  setup,
  // First byte even: the prefix target; odd: the causal one; plus 2: its bf16 variant; 4-7: the
  // matmul kernel's four forms, 12-15 on packed weights, 20-23 the f32 kernel's, plus 32 with live rows (lengths 0 and
  // not: padding rows and live ones), 64-66 the joined attention call, 192-194 its rotating variant. The instruction-set cap comes from the byte
  // after the lengths (none in the first five).
  seeds: () => [
    Buffer.from([0, 2, 3, 1, 2, 16, 40, 0, 0]),
    Buffer.from([0, 1, 5, 2, 1, 7, 255, 1, 3, 0, 0]),
    Buffer.from([0, 4, 2, 3, 3, 16, 10, 2, 7, 0, 7, 1, 3]),
    Buffer.from([1, 0, 0, 3, 3, 16, 200, 0, 0]),
    Buffer.from([1, 0, 0, 1, 2, 7, 130, 1, 0, 2, 1, 3]),
    Buffer.from([2, 2, 3, 1, 2, 16, 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4]),
    Buffer.from([3, 0, 0, 3, 3, 16, 200, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
    Buffer.from([4, 19, 69, 49, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4]),
    Buffer.from([5, 8, 63, 32, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
    Buffer.from([6, 9, 32, 7, 2, 1, 2, 1]),
    Buffer.from([7, 1, 0, 31, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
    Buffer.from([12, 19, 69, 49, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4]),
    Buffer.from([13, 8, 63, 32, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
    Buffer.from([14, 9, 32, 7, 2, 1, 2, 1]),
    Buffer.from([20, 19, 69, 49, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]),
    Buffer.from([21, 8, 63, 32, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
    Buffer.from([22, 9, 32, 7, 2, 1, 2, 1]),
    Buffer.from([37, 19, 69, 49, 2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 4]),
    Buffer.from([45, 8, 63, 32, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0]),
    Buffer.from([54, 33, 32, 7, 2, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]),
    Buffer.from([64, 3, 4, 2, 2, 16, 40, 0, 0]),
    Buffer.from([66, 2, 3, 1, 2, 16, 200, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4]),
    Buffer.from([192, 3, 4, 2, 2, 8, 40, 0, 0]),
    Buffer.from([194, 2, 3, 1, 2, 4, 200, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4]),
  ],
  run,
  expected,
};
