#!/usr/bin/env node
'use strict';
// The items-over-prefix attention alone, one layer (SmolLM2-135M heads: Hq 9,
// Hkv 3, D 64), per prefix-attention form and kernel path, alternating in one
// process:
//
//   node scripts/bench/prefix-kernel.js [cases] [rounds=6] [shape=target]
//
// cases: comma-separated, each a form tag (joint, ones_own, ffi) with an
// optional kernel path cap and precision: ffi@avx2, ffi@avx512, ffi@portable,
// ffi-bf16@avx512bf16, ffi-bf16@portable ('-bf16': the program's dots in bf16,
// so the kernel form calls the bf16 kernel; '@isa': PJRT_SCORE_KERNEL_ISA).
// Default: joint,ones_own,ffi. shape: target (64 items x 20 tokens over 2000
// of 2048 prefix keys), rag (20 items x 500 tokens over 30), doc (1 item of
// 4,500 tokens over 30), items100 (100 x 100 over 30).
//
// CPU time of this process and wall time per execution, first round dropped;
// useful GFLOP: QK and PV over the keys each token sees (2 per multiply-add).
// A form's program of its own pays its temporaries' page faults on every run
// (inside a pass the layer loop allocates them once), so the StableHLO forms
// look slower here than inside an extend pass: compare passes with
// npm run bench:pieces -- --pass extend --no-pieces --forms ...
// PJRT_SCORE_KERNEL_THREADS=1 times the kernel on one thread.
const { Client, attentionKernelPaths } = require('../../dist/runtime');
const { buildProgram, itemsOverPrefix, parsePrefixAttentionTag } = require('../../dist/hlo');
const { makeInputs, prefixParams } = require('../../test/helpers/prefix-forms');
const { describeMachine, loadAverage } = require('../lib/machine');
const { finishCases, timeAlternating } = require('./lib/alternate');

const HEADS = { Hq: 9, Hkv: 3, D: 64 };
const SHAPES = {
  target: { P: 2048, prefixLength: 2000, N: 64, L: 20 },
  rag: { P: 32, prefixLength: 30, N: 20, L: 500 },
  items100: { P: 32, prefixLength: 30, N: 100, L: 100 },
  doc: { P: 32, prefixLength: 30, N: 1, L: 4500 },
};

function shapeOf(name) {
  const s = SHAPES[name];
  if (!s) throw new Error(`unknown shape ${name}: one of ${Object.keys(SHAPES).join(', ')}`);
  return { ...s, ...HEADS, itemLengths: Array(s.N).fill(s.L) };
}

/** Useful FLOPs: each item token sees the prefix and its own keys up to itself. */
function usefulFlops(c) {
  let keys = 0;
  for (const len of c.itemLengths) keys += len * c.prefixLength + (len * (len + 1)) / 2;
  return keys * c.Hq * c.D * 4;
}

function program(c, tag, bf16) {
  return buildProgram(
    `prefix_kernel_${tag}${bf16 ? '_bf16' : ''}`,
    (f) => ({ out: itemsOverPrefix(f, prefixParams(f, c), parsePrefixAttentionTag(tag)) }),
    bf16 ? { dotOperands: 'bf16' } : {},
  );
}

async function main() {
  const specs = (process.argv[2] || 'joint,ones_own,ffi').split(',');
  const rounds = Number(process.argv[3] || 6);
  const shapeName = process.argv[4] || 'target';
  const c = shapeOf(shapeName);
  const flops = usefulFlops(c);
  console.log(`machine: ${describeMachine()}`);
  console.log(`kernel paths (D 64): ${JSON.stringify(attentionKernelPaths(64))}`);
  console.log(`load average at start: ${loadAverage()}`);
  console.log(
    `shape ${shapeName}: ${c.N} items x ${c.L} tokens over ${c.prefixLength} prefix keys, Hq ${c.Hq}, Hkv ${c.Hkv}, D ${c.D}`,
  );
  const client = await Client.create();
  const inputs = makeInputs(1, c);
  const cases = [];
  for (const spec of specs) {
    const [form, isa] = spec.split('@');
    const bf16 = form.endsWith('-bf16');
    const tag = bf16 ? form.slice(0, -5) : form;
    const prog = program(c, tag, bf16);
    const exe = await client.compile(prog.text);
    const buffers = await Promise.all(prog.inputs.map((s, i) => client.upload(inputs[i], s.dims, s.dtype)));
    const before = process.env.PJRT_SCORE_KERNEL_ISA;
    if (isa) process.env.PJRT_SCORE_KERNEL_ISA = isa;
    const paths = attentionKernelPaths(c.D);
    if (before === undefined) delete process.env.PJRT_SCORE_KERNEL_ISA;
    else process.env.PJRT_SCORE_KERNEL_ISA = before;
    const path =
      tag === 'ffi' ? (bf16 ? `bf16 ${paths.bf16}` : `f32 ${paths.f32}`) : bf16 ? 'StableHLO, bf16 dots' : 'StableHLO';
    cases.push({ tag: spec, path, exe, buffers, ...(isa ? { isa } : {}) });
  }
  await timeAlternating(cases, rounds);

  console.log(`\n${(flops / 1e9).toFixed(2)} useful GFLOP per execution; ${rounds - 1} rounds after the first\n`);
  console.log('| case | path | CPU ms (min-max) | wall ms (min-max) | GFLOP per CPU-s (best) | GFLOP/s wall (best) |');
  console.log('| --- | --- | --- | --- | --- | --- |');
  for (const k of cases) {
    const range = (xs) => `${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}`;
    console.log(
      `| ${k.tag} | ${k.path} | ${range(k.cpu)} | ${range(k.wall)} | ${(flops / Math.min(...k.cpu) / 1e6).toFixed(1)} | ${(flops / Math.min(...k.wall) / 1e6).toFixed(1)} |`,
    );
  }
  finishCases(cases, client);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
