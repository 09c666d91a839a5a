#!/usr/bin/env node
'use strict';
// npm run bench:pieces — where the CPU time of a decoder pass goes, piece by
// piece, at the target workload's shapes (SmolLM2-135M: 64 items x 20 tokens
// against a 2048-key prefix cache, and the 2000-token prefill).
//
//   node scripts/bench/pieces.js [--runs 5] [--pass extend|prefill|both] [--json FILE]
//                                [--forms joint,ones_own,ffi] [--causal-forms qc2,qc4,...] [--no-pieces]
//                                [--pieces-form joint|ones_own]
//
// --forms adds whole extend programs with other prefix-attention forms by
// tag (joint, ones_own: the rows form, ffi: the addon's kernel;
// lib/hlo/attention/prefix.ts) to the same round-robin, so the forms are
// compared alternating, in one process. --causal-forms does the same for
// the prefill's causal attention (square; qc<n>: n query chunks, each
// against the keys it sees; ffi: the addon's kernel;
// lib/hlo/attention/causal.ts). --no-pieces times only the whole
// programs (and the roof). --pieces-form ones_own cuts the extend pass's
// softmax and values as the rows form (lib/hlo/attention/prefix-rows.ts)
// does them.
//
// Every run also times the passes the Scorer runs on this platform (its
// attention forms: the addon's kernels where the plugin registered them)
// and prints them against the roof in useful FLOPs (the work any exact
// method does for the pass: scripts/bench/lib/workloads.js, usefulFlops), in
// CPU time and in wall time: the production passes against the roof in one
// process, which a shared machine's swings between processes do not reach.
//
// Each piece (scripts/bench/lib/piece-programs.js) is its own program; the whole
// decoder_extend / decoder_prefill program (real weights) and the f32 matmul
// roof are timed in the same process, round-robin (A B C ... A B C ...), so
// load from other processes falls on all of them alike. Time is CPU time of
// this process per execution (process.cpuUsage: both XLA threads), not wall
// time: the machine may be shared. The roof is measured in the same unit,
// so "of roof" compares like with like.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Client } = require('../../dist');
const {
  buildProgram,
  decoderExtend,
  decoderPrefill,
  parseCausalAttentionTag,
  parsePrefixAttentionTag,
  TensorType,
} = require('../../dist/hlo');
const { loadModel } = require('../../dist/model');
const { uploadWeights } = require('../../dist/device-weights');
const { describeMachine, loadAverage, machine } = require('../lib/machine');
const { extendPieces, prefillPieces } = require('./lib/piece-programs');
const { usefulFlops } = require('./lib/workloads');
const { defaultCausalAttention, defaultPrefixAttention, platformFacts } = require('../../dist/scoring/platform');
const { upperMedian } = require('../lib/median');

const SHAPE = { P: 2048, prefixLength: 2000, C: 64, L: 20, labels: [9454, 2753] };

function parseArgs(argv) {
  const out = {
    runs: 5,
    pass: 'both',
    forms: [],
    causalForms: [],
    pieces: true,
    piecesForm: 'joint',
    json: path.join(__dirname, '..', '..', 'bench-results', 'pieces.json'),
  };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--runs') out.runs = Number(argv[++i]);
    else if (argv[i] === '--pass') out.pass = argv[++i];
    else if (argv[i] === '--json') out.json = argv[++i];
    else if (argv[i] === '--forms') out.forms = argv[++i].split(',').map(parsePrefixAttentionTag);
    else if (argv[i] === '--causal-forms') out.causalForms = argv[++i].split(',').map(parseCausalAttentionTag);
    else if (argv[i] === '--no-pieces') out.pieces = false;
    else if (argv[i] === '--pieces-form') out.piecesForm = argv[++i];
    else throw new Error(`unknown argument ${argv[i]} (use --runs N, --pass extend|prefill|both, --json FILE)`);
  }
  if (!(Number.isInteger(out.runs) && out.runs >= 1))
    throw new Error(`--runs must be a positive integer, got ${out.runs}`);
  if (!['joint', 'ones_own'].includes(out.piecesForm))
    throw new Error(`--pieces-form must be joint or ones_own, got ${out.piecesForm}`);
  if (!['extend', 'prefill', 'both'].includes(out.pass))
    throw new Error(`--pass must be extend, prefill or both, got ${out.pass}`);
  return out;
}

let seed = 0x9e3779b9;
function randomF32(n, scale) {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    a[i] = (seed / 2 ** 32 - 0.5) * scale;
  }
  return a;
}

/** Inputs for a program by parameter name: lengths and indices of the target shape, random data elsewhere. */
function hostInput(spec) {
  const n = spec.dims.reduce((a, b) => a * b, 1);
  if (spec.dtype === 'f32') return randomF32(n, 0.2);
  const { prefixLength, L, labels } = SHAPE;
  switch (spec.name) {
    case 'prefix_length':
      return Int32Array.of(prefixLength);
    case 'item_lengths':
      return new Int32Array(n).fill(L);
    case 'rows':
      return Int32Array.from({ length: n }, (_, i) => (n === 1 ? prefixLength - 1 : i * L + L - 1));
    case 'labels':
      return Int32Array.from(labels);
    case 'item_tokens':
    case 'prefix_tokens':
      return Int32Array.from({ length: n }, (_, i) => 100 + ((i * 7919) % 48000));
    default:
      throw new Error(`no input rule for ${spec.name} (${spec.dtype})`);
  }
}

/** One timed execution: CPU ms of this process (all threads) and wall ms. */
async function timeOnce(exe, args) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const outs = await exe.execute(args);
  const wallMs = performance.now() - t0;
  const c = process.cpuUsage(c0);
  outs.forEach((o) => o.dispose());
  return { cpuMs: (c.user + c.system) / 1000, wallMs };
}

/**
 * The roof as npm run bench:runtime measures it, warm: one untimed execution (after the other
 * programs of the round, its operands are out of cache), then the median of three.
 */
async function timeWarm(exe, args) {
  await timeOnce(exe, args);
  const runs = [];
  for (let i = 0; i < 3; i++) runs.push(await timeOnce(exe, args));
  return runs.sort((a, b) => a.cpuMs - b.cpuMs)[1];
}

function matmulProgram(n) {
  return buildProgram(`roof_${n}`, (f) => {
    const a = f.param(TensorType.f32([n, n]), 'a');
    const b = f.param(TensorType.f32([n, n]), 'b');
    return { c: f.matmul(a, b) };
  });
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  console.log(`machine: ${describeMachine()}`);
  console.log(`load average at start: ${loadAverage()}`);
  const client = await Client.create();
  const model = loadModel();
  const c = model.config;
  const weights = await uploadWeights(client, c, model.weights);
  const options = { dotPrecision: 'HIGHEST' };
  const { P, C, L } = SHAPE;

  // Cases: the roof, then per pass its pieces and the whole program.
  const cases = [];
  for (const n of [1024, 2048])
    cases.push({
      group: 'roof',
      name: `f32 matmul ${n}^3`,
      where: 'once',
      flops: 2 * n ** 3,
      program: matmulProgram(n),
    });
  // The passes as the Scorer runs them here, and their useful FLOPs: the prefill is the query alone,
  // an extend pass its C items (the workload's FLOPs with C items less those with none).
  const facts = platformFacts(client.platformName);
  const production = {
    prefixAttention: defaultPrefixAttention(facts, { kernel: client.prefixAttentionKernel, cudnn: false }),
    causalAttention: defaultCausalAttention(facts, { kernel: client.prefixAttentionKernel, cudnn: false }),
  };
  const work = { queryTokens: SHAPE.prefixLength, itemTokens: L };
  const useful = { prefill: usefulFlops(c, work, 0), extend: usefulFlops(c, work, C) - usefulFlops(c, work, 0) };
  // A whole pass program at the target's shape; `attention`: its prefix (extend) or causal
  // (prefill) attention form, undefined for the builders' default.
  const passProgram = (pass, attention) =>
    pass === 'extend'
      ? decoderExtend(c, { prefix: P, items: C, itemLength: L, labels: 2 }, { ...options, prefixAttention: attention })
      : decoderPrefill(c, { prefix: P, labels: 2 }, { ...options, causalAttention: attention });
  const passes = args.pass === 'both' ? ['extend', 'prefill'] : [args.pass];
  const passFlops = {};
  for (const pass of passes) {
    const pieces = pass === 'extend' ? extendPieces(c, SHAPE, args.piecesForm) : prefillPieces(c, SHAPE);
    passFlops[pass] = pieces.reduce((a, k) => a + k.flops, 0);
    if (args.pieces) for (const p of pieces) cases.push({ group: pass, ...p });
    const whole = passProgram(pass, undefined);
    const variants = (pass === 'extend' ? args.forms : args.causalForms).map((form) => passProgram(pass, form));
    // The whole program in the pieces' own form: what the pieces add up to, and what the forms compare with.
    if (args.pieces || variants.length)
      cases.push({ group: pass, name: `whole ${whole.name}`, whole: true, where: 'once', flops: NaN, program: whole });
    for (const variant of variants)
      cases.push({
        group: `${pass} forms`,
        name: variant.name,
        whole: true,
        where: 'once',
        flops: NaN,
        program: variant,
      });
    const used = passProgram(pass, pass === 'extend' ? production.prefixAttention : production.causalAttention);
    cases.push({
      group: `${pass} production`,
      name: used.name,
      whole: true,
      where: 'once',
      flops: useful[pass],
      program: used,
    });
  }

  process.stdout.write(`compiling ${cases.length} programs...`);
  const t0 = performance.now();
  for (const k of cases) {
    k.exe = await client.compile(k.program.text);
    const data = k.program.inputs.slice(0, k.whole ? k.program.inputs.length - weights.buffers.length : undefined);
    k.args = [];
    for (const spec of data) k.args.push(await client.upload(hostInput(spec), spec.dims, spec.dtype));
    if (k.whole) k.args.push(...weights.buffers);
    k.runs = [];
  }
  console.log(` ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  // One untimed execution each, then round-robin timed runs.
  for (const k of cases) await timeOnce(k.exe, k.args);
  for (let r = 0; r < args.runs; r++) {
    for (const k of cases)
      k.runs.push(k.group === 'roof' ? await timeWarm(k.exe, k.args) : await timeOnce(k.exe, k.args));
    process.stdout.write(`round ${r + 1}/${args.runs} (load ${os.loadavg()[0].toFixed(2)})\n`);
  }

  const cpuMs = (k) => upperMedian(k.runs.map((x) => x.cpuMs));
  const wallMs = (k) => upperMedian(k.runs.map((x) => x.wallMs));
  const roofCases = cases.filter((k) => k.group === 'roof');
  const roofCpu = Math.max(...roofCases.map((k) => k.flops / cpuMs(k) / 1e6));
  const roofWall = Math.max(...roofCases.map((k) => k.flops / wallMs(k) / 1e6));
  console.log(
    `\nroof: f32 matmul ${roofWall.toFixed(1)} GFLOP/s wall, ${roofCpu.toFixed(1)} GFLOP per CPU-second (best of ${roofCases.map((k) => k.name).join(', ')})`,
  );

  const report = {
    machine: machine(),
    loadAverage: os.loadavg(),
    runs: args.runs,
    shape: SHAPE,
    roof: { wallGflops: roofWall, cpuGflops: roofCpu },
    passes: {},
  };
  for (const pass of passes) {
    const rows = cases.filter((k) => k.group === pass);
    const pieces = rows.filter((k) => !k.whole);
    const whole = rows.find((k) => k.whole);
    const sumMs = pieces.reduce((a, k) => a + cpuMs(k), 0);
    const sumFlops = passFlops[pass];
    const title =
      pass === 'extend'
        ? `extend pass: ${C} items x ${L} tokens against a ${P}-key prefix (${SHAPE.prefixLength} valid)`
        : `prefill pass: ${SHAPE.prefixLength} tokens in a ${P} bucket`;
    if (!pieces.length) continue;
    console.log(`\n${title}; CPU ms per pass: median of ${args.runs} runs\n`);
    console.log('| piece | runs | CPU ms per pass | share of sum | GFLOP per pass | GFLOP per CPU-s | of roof |');
    console.log('| --- | --- | --- | --- | --- | --- | --- |');
    const line = (name, where, ms, flops) =>
      `| ${name} | ${where} | ${ms.toFixed(0)} | ${((100 * ms) / sumMs).toFixed(1)}% | ${(flops / 1e9).toFixed(1)} | ${(flops / ms / 1e6).toFixed(1)} | ${((100 * flops) / ms / 1e6 / roofCpu).toFixed(0)}% |`;
    for (const k of pieces) console.log(line(k.name, k.where, cpuMs(k), k.flops));
    console.log(line('**sum of pieces**', '', sumMs, sumFlops));
    console.log(line(`**whole program** (${whole.program.name})`, 'once', cpuMs(whole), sumFlops));
    console.log(
      `\nwhole / sum of pieces: ${(cpuMs(whole) / sumMs).toFixed(2)}; whole program wall ${wallMs(whole).toFixed(0)} ms (CPU/wall ${(cpuMs(whole) / wallMs(whole)).toFixed(2)})`,
    );
    report.passes[pass] = {
      pieces: pieces.map((k) => ({ name: k.name, runs: k.where, cpuMsPerPass: cpuMs(k), flopsPerPass: k.flops })),
      sumCpuMs: sumMs,
      sumFlops,
      whole: { name: whole.program.name, cpuMs: cpuMs(whole), wallMs: wallMs(whole) },
    };
  }
  report.production = [];
  console.log(
    `\nthe passes as the Scorer runs them on this platform (prefix attention ${JSON.stringify(production.prefixAttention)}, causal ${JSON.stringify(production.causalAttention)}), in useful FLOPs, against the roof; median of ${args.runs} runs\n`,
  );
  console.log(
    '| pass | program | useful GFLOP | CPU ms | GFLOP per CPU-s | of roof (CPU) | wall ms | GFLOP/s wall | of roof (wall) |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const pass of passes) {
    const k = cases.find((x) => x.group === `${pass} production`);
    const [ms, wall] = [cpuMs(k), wallMs(k)];
    const [perCpu, perWall] = [k.flops / ms / 1e6, k.flops / wall / 1e6];
    console.log(
      `| ${pass} | ${k.program.name} | ${(k.flops / 1e9).toFixed(1)} | ${ms.toFixed(0)} | ${perCpu.toFixed(1)} | ${((100 * perCpu) / roofCpu).toFixed(1)}% | ${wall.toFixed(0)} | ${perWall.toFixed(1)} | ${((100 * perWall) / roofWall).toFixed(1)}% |`,
    );
    report.production.push({
      pass,
      name: k.program.name,
      usefulFlops: k.flops,
      cpuMs: ms,
      wallMs: wall,
      runsCpuMs: k.runs.map((x) => x.cpuMs),
      ofRoofCpu: perCpu / roofCpu,
      ofRoofWall: perWall / roofWall,
    });
  }
  report.forms = [];
  for (const pass of passes) {
    const forms = cases.filter((k) => k.group === `${pass} forms`);
    if (!forms.length) continue;
    const base = cases.find((k) => k.group === pass && k.whole);
    const flops = passFlops[pass];
    console.log(
      `\n${pass} pass, attention forms (alternating in one process, ${args.runs} rounds; ratio: median over rounds of form / default in the same round; GFLOP: the default's)\n`,
    );
    console.log('| program | CPU ms (median) | CPU ms (min) | ratio to default | GFLOP per CPU-s | of roof |');
    console.log('| --- | --- | --- | --- | --- | --- |');
    for (const k of [base, ...forms]) {
      const ratio = upperMedian(k.runs.map((x, r) => x.cpuMs / base.runs[r].cpuMs));
      const ms = cpuMs(k);
      console.log(
        `| ${k.program.name} | ${ms.toFixed(0)} | ${Math.min(...k.runs.map((x) => x.cpuMs)).toFixed(0)} | ${ratio.toFixed(3)} | ${(flops / ms / 1e6).toFixed(1)} | ${((100 * flops) / ms / 1e6 / roofCpu).toFixed(0)}% |`,
      );
      report.forms.push({
        pass,
        name: k.program.name,
        cpuMs: ms,
        runsCpuMs: k.runs.map((x) => x.cpuMs),
        ratioToDefault: ratio,
      });
    }
  }
  console.log(`\nload average at end: ${loadAverage()}`);
  fs.mkdirSync(path.dirname(args.json), { recursive: true });
  fs.writeFileSync(args.json, JSON.stringify(report, null, 2) + '\n');
  console.log(`wrote ${path.relative(process.cwd(), args.json)}`);
  for (const k of cases) {
    k.args.slice(0, k.whole ? k.args.length - weights.buffers.length : undefined).forEach((b) => b.dispose());
    k.exe.dispose();
  }
  weights.dispose();
  client.dispose();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
