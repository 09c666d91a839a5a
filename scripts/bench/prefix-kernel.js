#!/usr/bin/env node
'use strict';
// The items-over-prefix attention alone, one layer at the target shape (64
// items x 20 tokens over 2000 of 2048 prefix keys, SmolLM2-135M heads), per
// prefix-attention form, alternating in one process:
//
//   node scripts/bench/prefix-kernel.js [forms=joint,ones_own,ffi] [rounds=6]
//
// CPU time of this process and wall time per execution, first round dropped.
// A form's program of its own pays its temporaries' page faults on every run
// (inside a pass the layer loop allocates them once), so the StableHLO forms
// look slower here than inside an extend pass: compare passes with
// npm run bench:pieces -- --pass extend --no-pieces --forms ...
// PJRT_SCORE_KERNEL_THREADS=1 times the kernel on one thread.
const os = require('node:os');
const { Client } = require('../../dist/runtime');
const { parsePrefixAttentionTag } = require('../../dist/hlo');
const { program, makeInputs } = require('../../test/helpers/prefix-forms');
const { describeMachine } = require('../machine');
const { disposeCases, timeAlternating } = require('./alternate');

const SHAPE = { P: 2048, prefixLength: 2000, N: 64, L: 20, itemLengths: Array(64).fill(20), Hq: 9, Hkv: 3, D: 64 };
const FLOPS = SHAPE.N * SHAPE.L * SHAPE.Hq * SHAPE.prefixLength * SHAPE.D * 4; // QK and PV, 2 per multiply-add

async function main() {
  const tags = (process.argv[2] || 'joint,ones_own,ffi').split(',');
  const rounds = Number(process.argv[3] || 6);
  console.log(`machine: ${describeMachine()}`);
  console.log(`load average at start: ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  const client = await Client.create();
  const inputs = makeInputs(1, SHAPE);
  const cases = [];
  for (const tag of tags) {
    const prog = program(SHAPE, [parsePrefixAttentionTag(tag)]);
    const exe = await client.compile(prog.text);
    const buffers = await Promise.all(prog.inputs.map((s, i) => client.upload(inputs[i], s.dims, s.dtype)));
    cases.push({ tag, exe, buffers });
  }
  await timeAlternating(cases, rounds);

  console.log(`\n${(FLOPS / 1e9).toFixed(2)} GFLOP per execution; ${rounds - 1} rounds after the first\n`);
  console.log('| form | CPU ms (min-max) | wall ms (min-max) | GFLOP per CPU-s (best) |');
  console.log('| --- | --- | --- | --- |');
  for (const k of cases) {
    const range = (xs) => `${Math.min(...xs).toFixed(0)}-${Math.max(...xs).toFixed(0)}`;
    console.log(`| ${k.tag} | ${range(k.cpu)} | ${range(k.wall)} | ${(FLOPS / Math.min(...k.cpu) / 1e6).toFixed(1)} |`);
  }
  console.log(`\nload average at end: ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  disposeCases(cases);
  client.dispose();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
