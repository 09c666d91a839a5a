#!/usr/bin/env node
'use strict';
// The prefill's causal attention alone, one layer at the target shape (2000
// valid of 2048 query tokens, SmolLM2-135M heads: Hq 9, Hkv 3, D 64), per
// causal-attention form, alternating in one process, beside the f32 matmul
// roof (1024^3 and 2048^3, the better) timed in the same rounds:
//
//   node scripts/bench/causal-kernel.js [forms=square,qc4,qc8,ffi] [rounds=6]
//
// CPU time of this process and wall time per execution, first round dropped.
// GFLOP is the useful work: each valid row against the keys it sees (QK and
// PV), the same count for every form. A form's program of its own pays its
// temporaries' page faults on every run (inside a pass the layer loop
// allocates them once), so the StableHLO forms look slower here than inside
// a prefill: compare passes with
// npm run bench:pieces -- --pass prefill --no-pieces --causal-forms ...
const { Client } = require('../../dist/runtime');
const { buildProgram, causalPrefix, parseCausalAttentionTag, TensorType } = require('../../dist/hlo');
const { describeMachine, loadAverage } = require('../lib/machine');
const { finishCases, timeAlternating } = require('./lib/alternate');
const { upperMedian } = require('../lib/median');

const SHAPE = { T: 2048, validLength: 2000, Hq: 9, Hkv: 3, D: 64 };
// Row i sees i + 1 keys: sum over the valid rows, 2 FLOPs per multiply-add, QK and PV.
const FLOPS = ((SHAPE.validLength * (SHAPE.validLength + 1)) / 2) * SHAPE.Hq * SHAPE.D * 4;
const ROOF_SIZES = [1024, 2048];

function formProgram(form) {
  const { T, Hq, Hkv, D } = SHAPE;
  return buildProgram('causal_alone', (f) => {
    const q = f.param(TensorType.f32([T, Hq, D]), 'q');
    const k = f.param(TensorType.f32([T, Hkv, D]), 'k');
    const v = f.param(TensorType.f32([T, Hkv, D]), 'v');
    return { out: causalPrefix(f, q, k, v, f.param(TensorType.s32([]), 'valid_length'), form) };
  });
}

function roofProgram(n) {
  return buildProgram(`roof_${n}`, (f) => ({
    c: f.matmul(f.param(TensorType.f32([n, n]), 'a'), f.param(TensorType.f32([n, n]), 'b')),
  }));
}

function hostInput(spec, seed) {
  const size = spec.dims.reduce((a, b) => a * b, 1);
  if (spec.dtype === 's32') return Int32Array.of(SHAPE.validLength);
  return Float32Array.from({ length: size }, (_, i) => Math.sin(i * 0.37 + seed));
}

async function main() {
  const tags = (process.argv[2] || 'square,qc4,qc8,ffi').split(',');
  const rounds = Number(process.argv[3] || 6);
  console.log(`machine: ${describeMachine()}`);
  console.log(`load average at start: ${loadAverage()}`);
  const client = await Client.create();
  const roofs = ROOF_SIZES.map((n) => ({ tag: `roof ${n}^3`, flops: 2 * n ** 3, prog: roofProgram(n) }));
  const cases = [
    ...roofs,
    ...tags.map((tag) => ({ tag, flops: FLOPS, prog: formProgram(parseCausalAttentionTag(tag)) })),
  ];
  for (const k of cases) {
    k.exe = await client.compile(k.prog.text);
    k.buffers = await Promise.all(k.prog.inputs.map((s, i) => client.upload(hostInput(s, i), s.dims, s.dtype)));
  }
  await timeAlternating(cases, rounds);

  const roof = Math.max(...roofs.map((k) => k.flops / upperMedian(k.cpu) / 1e6));
  console.log(
    `\n${(FLOPS / 1e9).toFixed(2)} useful GFLOP per causal attention; roof (f32 matmul, the better median) ${roof.toFixed(1)} GFLOP per CPU-s; ${rounds - 1} rounds after the first\n`,
  );
  console.log('| form | CPU ms (median, min-max) | wall ms (median) | GFLOP per CPU-s (median) | of roof |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const k of cases) {
    const gflops = k.flops / upperMedian(k.cpu) / 1e6;
    console.log(
      `| ${k.tag} | ${upperMedian(k.cpu).toFixed(0)} (${Math.min(...k.cpu).toFixed(0)}-${Math.max(...k.cpu).toFixed(0)}) | ${upperMedian(k.wall).toFixed(0)} | ${gflops.toFixed(1)} | ${((100 * gflops) / roof).toFixed(0)}% |`,
    );
  }
  finishCases(cases, client);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
