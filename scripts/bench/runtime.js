#!/usr/bin/env node
'use strict';
// npm run bench:runtime — the runtime's own costs on this machine:
// per-call overhead, host<->device bandwidth, and f32 matmul GFLOP/s (the
// compute roof that scripts/bench/plans.js compares the scoring plans against: the best of XLA's
// f32 dots and, on AVX-512 CPUs, the addon's f32 matmul kernel, native/kernels/matmul_f32.cc) and,
// where the CPU has bf16 matrix units (AMX, AVX512_BF16), the bf16 x bf16 -> f32
// matmul roof (what bf16 runs are compared against): the best of XLA's bf16 dots and the addon's
// bf16 matmul kernel (native/kernels/matmul_bf16.cc), which the passes' projections run through there.
const { Client } = require('../../dist');
const { describeMachine, machine } = require('../lib/machine');
const fs = require('node:fs');
const path = require('node:path');
const { upperMedian } = require('../lib/median');

async function timeIt(fn, reps) {
  const times = [];
  for (let i = 0; i < reps; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  return times;
}

/**
 * GFLOP/s of a square matmul program at 1024 and 2048 (the upper median of 20 and 8 runs after 2
 * untimed): `program(t, size)` writes it, t(element type) being the size's tensor type; inputs are f32.
 */
async function matmulGflops(client, label, program) {
  const gflops = {};
  for (const size of [1024, 2048]) {
    const exe = await client.compile(program((e) => `tensor<${size}x${size}x${e}>`, size));
    const data = Float32Array.from({ length: size * size }, (_, i) => ((i * 7919) % 1000) / 1000 - 0.5);
    const a = await client.upload(data, [size, size]);
    const b = await client.upload(data, [size, size]);
    for (let i = 0; i < 2; i++) (await exe.execute([a, b]))[0].dispose();
    const times = await timeIt(async () => (await exe.execute([a, b]))[0].dispose(), size === 1024 ? 20 : 8);
    gflops[size] = (2 * size ** 3) / upperMedian(times) / 1e9;
    console.log(`${label} ${size}x${size}x${size}: ${gflops[size].toFixed(1)} GFLOP/s (median of ${times.length})`);
    a.dispose();
    b.dispose();
    exe.dispose();
  }
  return gflops;
}

/** matmulGflops of one of the addon's matmul kernels (lib/hlo/nn/matmul-kernel.ts): x f32 [n, n] . w f32 [1, n, n], one layer of a stack. */
function kernelGflops(client, label, builder) {
  const hlo = require('../../dist/hlo');
  return matmulGflops(
    client,
    label,
    (_t, size) =>
      hlo.buildProgram(`roof_${builder}_${size}`, (f) => {
        const x = f.param(hlo.TensorType.f32([size, size]), 'x');
        const w = f.param(hlo.TensorType.f32([size, size]), 'w');
        return { y: hlo[builder](f, x, f.reshape(w, [1, size, size]), f.scalar(0, 's32')) };
      }).text,
  );
}

async function main() {
  console.log(`machine: ${describeMachine()}`);
  const client = await Client.create();
  console.log(
    `plugin: ${client.platformName} ${client.platformVersion}, PJRT C API ${client.apiVersion.major}.${client.apiVersion.minor}`,
  );
  const results = { machine: machine() };

  // 1. Per-call overhead: execute a trivial program, await it.
  const trivial = await client.compile(`func.func @main(%a: tensor<f32>) -> tensor<f32> {
    return %a : tensor<f32>
  }`);
  const scalar = await client.upload(new Float32Array([1]), []);
  for (let i = 0; i < 200; i++) (await trivial.execute([scalar]))[0].dispose();
  const calls = await timeIt(async () => (await trivial.execute([scalar]))[0].dispose(), 2000);
  results.executeOverheadUs = upperMedian(calls) * 1e6;
  console.log(`execute overhead (trivial program, median of 2000): ${results.executeOverheadUs.toFixed(1)} us`);

  // 2. Bandwidth with a 64 MiB f32 array.
  const n = 16 * 1024 * 1024;
  const host = new Float32Array(n).fill(1);
  const h2d = await timeIt(async () => (await client.upload(host, [n])).dispose(), 8);
  results.hostToDeviceGBs = (n * 4) / upperMedian(h2d) / 1e9;
  const onDevice = await client.upload(host, [n]);
  const d2h = await timeIt(async () => onDevice.toHost(), 8);
  results.deviceToHostGBs = (n * 4) / upperMedian(d2h) / 1e9;
  console.log(
    `host -> device (64 MiB, one copy into a fresh device allocation): ${results.hostToDeviceGBs.toFixed(2)} GB/s`,
  );
  console.log(`device -> host (64 MiB): ${results.deviceToHostGBs.toFixed(2)} GB/s`);
  onDevice.dispose();

  // 3. f32 matmul roof.
  results.matmulGflops = await matmulGflops(
    client,
    'f32 matmul',
    (t) => `func.func @main(%a: ${t('f32')}, %b: ${t('f32')}) -> ${t('f32')} {
      %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (${t('f32')}, ${t('f32')}) -> ${t('f32')}
      return %0 : ${t('f32')}
    }`,
  );
  const { attentionKernelPaths } = require('../../dist/runtime');
  results.cpuClass = attentionKernelPaths(64).cpu;
  const f32Best = [...Object.values(results.matmulGflops)];
  if (['avx512', 'avx512bf16', 'amx'].includes(results.cpuClass) && client.prefixAttentionKernel) {
    // The addon's f32 kernel: f32 products and sums.
    results.f32KernelMatmulGflops = await kernelGflops(client, "the addon's f32 matmul kernel", 'matmulF32Kernel');
    f32Best.push(...Object.values(results.f32KernelMatmulGflops));
  }
  results.roofGflops = Math.max(...f32Best);
  console.log(`compute roof (best f32 matmul): ${results.roofGflops.toFixed(1)} GFLOP/s`);

  // 4. bf16 roof, where the CPU has bf16 matrix units (AMX; AVX512_BF16): bf16 x bf16 -> f32
  // dot_general, the operands converted from f32 inside the program (O(n^2) of the O(n^3) work).
  if (['amx', 'avx512bf16'].includes(results.cpuClass)) {
    results.bf16MatmulGflops = await matmulGflops(
      client,
      'bf16 x bf16 -> f32 matmul',
      (t) => `func.func @main(%a: ${t('f32')}, %b: ${t('f32')}) -> ${t('f32')} {
        %a1 = stablehlo.convert %a : (${t('f32')}) -> ${t('bf16')}
        %b1 = stablehlo.convert %b : (${t('f32')}) -> ${t('bf16')}
        %0 = stablehlo.dot_general %a1, %b1, contracting_dims = [1] x [0] : (${t('bf16')}, ${t('bf16')}) -> ${t('f32')}
        return %0 : ${t('f32')}
      }`,
    );
    const best = [...Object.values(results.bf16MatmulGflops)];
    if (client.prefixAttentionKernel) {
      // The addon's bf16 kernel: both operands rounded to bf16 in the call.
      results.bf16KernelMatmulGflops = await kernelGflops(client, "the addon's bf16 matmul kernel", 'matmulBf16Kernel');
      best.push(...Object.values(results.bf16KernelMatmulGflops));
    }
    results.bf16RoofGflops = Math.max(...best);
    console.log(
      `bf16 roof (best bf16 matmul, CPU class ${results.cpuClass}): ${results.bf16RoofGflops.toFixed(1)} GFLOP/s`,
    );
  } else {
    console.log(`bf16 roof: not measured (CPU class ${results.cpuClass}: no bf16 matrix units)`);
  }
  client.dispose();

  const outDir = path.join(__dirname, '..', '..', 'bench-results');
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'runtime.json'), JSON.stringify(results, null, 2) + '\n');
  console.log(`wrote bench-results/runtime.json`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
