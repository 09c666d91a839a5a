'use strict';
// Concurrency and the event loop: work runs off the JS thread.
const test = require('tape');
const { Client } = require('..');
const { prng } = require('./helpers/prng');

let client;
test('setup', async (t) => {
  client = await Client.create();
  t.pass('client');
});

test('100 concurrent execute calls all return correct results', async (t) => {
  const exe = await client.compile(`func.func @main(%a: tensor<64xf32>, %s: tensor<f32>) -> tensor<64xf32> {
    %b = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<64xf32>
    %0 = stablehlo.multiply %a, %b : tensor<64xf32>
    return %0 : tensor<64xf32>
  }`);
  const r = prng(7);
  const a = r.floats(64);
  const input = await client.upload(a, [64]);
  const scales = Array.from({ length: 100 }, (_, i) => i - 50);
  const scaleBuffers = await Promise.all(scales.map((s) => client.upload(new Float32Array([s]), [])));
  const outputs = await Promise.all(scaleBuffers.map((sb) => exe.execute([input, sb])));
  const host = await Promise.all(outputs.map(([o]) => o.toHost()));
  let wrong = 0;
  host.forEach((h, i) => {
    for (let j = 0; j < 64; j++) if (h[j] !== Math.fround(a[j] * scales[i])) wrong++;
  });
  t.equal(wrong, 0, 'every element of every result equals a * scale');
  outputs.forEach(([o]) => o.dispose());
  scaleBuffers.forEach((b) => b.dispose());
  input.dispose();
  exe.dispose();
});

test('the event loop keeps turning while a long execution runs', async (t) => {
  // A loop of matmuls that takes a good fraction of a second on a CPU.
  const N = 512;
  const exe = await client.compile(`func.func @main(%a: tensor<${N}x${N}xf32>) -> tensor<${N}x${N}xf32> {
    %zero = stablehlo.constant dense<0> : tensor<i32>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %limit = stablehlo.constant dense<500> : tensor<i32>
    %r:2 = stablehlo.while(%i = %zero, %x = %a) : tensor<i32>, tensor<${N}x${N}xf32>
    cond {
      %c = stablehlo.compare LT, %i, %limit : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %y = stablehlo.dot_general %x, %a, contracting_dims = [1] x [0] : (tensor<${N}x${N}xf32>, tensor<${N}x${N}xf32>) -> tensor<${N}x${N}xf32>
      %s = stablehlo.constant dense<0.001> : tensor<${N}x${N}xf32>
      %z = stablehlo.multiply %y, %s : tensor<${N}x${N}xf32>
      %n = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %n, %z : tensor<i32>, tensor<${N}x${N}xf32>
    }
    return %r#1 : tensor<${N}x${N}xf32>
  }`);
  const a = await client.upload(prng(8).floats(N * N), [N, N]);
  // Turns of the loop counted by setImmediate while the execution runs. A call that blocked the loop and
  // then resolved would resume this function (a microtask) before any immediate could run: 0 turns, on
  // any machine; a worker's completion arrives in a later poll phase, after at least one turn.
  let turns = 0;
  let running = true;
  // A few turns are enough to tell (spinning on setImmediate the whole time would take a core from the execution).
  const turn = () => {
    if (!running) return;
    turns++;
    if (turns < 3) setImmediate(turn);
  };
  const started = Date.now();
  const pending = exe.execute([a]);
  setImmediate(turn);
  const [out] = await pending;
  running = false;
  const turnsDuring = turns;
  await out.toHost();
  t.comment(`execution took ${Date.now() - started} ms, ${turnsDuring} turns of the loop meanwhile`);
  t.ok(turnsDuring >= 1, `the loop turned while the execution ran (${turnsDuring} turns)`);
  out.dispose();
  a.dispose();
  exe.dispose();
});

test('teardown', (t) => {
  client.dispose();
  t.end();
});
