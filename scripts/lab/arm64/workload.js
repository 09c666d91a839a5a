'use strict';
// What scripts/lab/arm64/run.js runs twice on the same inputs: under the
// emulated arm64 Node and under this machine's x86-64 Node, each in the same
// package copy (package.json, dist/, prebuilds/ for both platforms; no
// build/), so node-gyp-build picks the prebuild of the running architecture.
// It fetches (or finds, verified by its marker) the CPU plugin of the running
// architecture, compiles and runs one StableHLO program and scores one
// request with a tiny random model; prints one JSON line.
//
//   node workload.js <package copy> <model.gguf>
const path = require('node:path');

const [pkg, modelFile] = process.argv.slice(2);

// One program with a dot, a transcendental and a reduction: f(a, b) = sum_rows(tanh(a @ b)) + exp(-a @ b).
const PROGRAM = `func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x4xf32>) -> (tensor<4xf32>, tensor<4x4xf32>) {
  %ab = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0], precision = [HIGHEST, HIGHEST] : (tensor<4x8xf32>, tensor<8x4xf32>) -> tensor<4x4xf32>
  %t = stablehlo.tanh %ab : tensor<4x4xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %sum = stablehlo.reduce(%t init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<4x4xf32>, tensor<f32>) -> tensor<4xf32>
  %n = stablehlo.negate %ab : tensor<4x4xf32>
  %e = stablehlo.exponential %n : tensor<4x4xf32>
  return %sum, %e : tensor<4xf32>, tensor<4x4xf32>
}`;

/** Deterministic inputs in [-1, 1): the same on both machines. */
function inputs(count, seed) {
  const out = new Float32Array(count);
  let x = seed >>> 0;
  for (let i = 0; i < count; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    out[i] = x / 2 ** 31 - 1;
  }
  return out;
}

async function main() {
  const { Client, Scorer } = require(pkg);
  const assets = require(path.join(pkg, 'dist', 'assets'));
  const native = require(path.join(pkg, 'dist', 'runtime', 'binding')).binding();
  const report = { arch: process.arch, node: process.version, napi: process.versions.napi };
  report.prebuild = require('node-gyp-build').resolve(pkg);

  const asset = assets.cpuPluginFor();
  report.pluginWheel = asset.wheelFile;
  report.fetchLog = [];
  report.plugin = await assets.fetchCpuPlugin({ log: (line) => report.fetchLog.push(line) });
  report.pluginVerified = assets.isFetched(asset);

  const client = await Client.create({ plugin: report.plugin });
  report.platform = `${client.platformName} ${client.platformVersion}`;
  const exe = await client.compile(PROGRAM);
  const [sum, e] = await exe.execute([
    await client.upload(inputs(32, 1), [4, 8]),
    await client.upload(inputs(32, 2), [8, 4]),
  ]);
  report.program = [...Array.from(await sum.toHost()), ...Array.from(await e.toHost())];
  report.prefixAttentionKernel = client.prefixAttentionKernel;
  if (typeof native.attentionKernelPaths === 'function') report.kernelPaths = native.attentionKernelPaths(16);
  client.dispose();

  const scorer = await Scorer.load({ model: modelFile, plugin: report.plugin, diskCache: false });
  report.platformFacts = scorer.platform.measured;
  report.cpuClass = scorer.platform.cpuClass ?? null;
  report.prefixAttention = scorer.prefixAttention.kind;
  const request = { query: 'the cat sat on', items: [' the mat.', ' 2024 things', ''], labelTokenIds: [5, 9, 17] };
  // The labels' probabilities (tiny: a random model over 64 tokens), and the same softmaxed over the labels.
  report.scores = (await scorer.score(request)).scores.map((row) => Array.from(row));
  report.softmax = (await scorer.score({ ...request, applySoftmax: true })).scores.map((row) => Array.from(row));
  scorer.dispose();
  process.stdout.write(`${JSON.stringify(report)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
