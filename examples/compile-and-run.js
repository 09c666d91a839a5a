// Compile a StableHLO program and run it on the PJRT device.
// Run: node examples/compile-and-run.js
const { Client } = require('pjrt-score');

async function main() {
  const client = await Client.create(); // the cached XLA CPU plugin, or PJRT_PLUGIN_PATH
  console.log(
    `${client.platformName} (${client.devices.length} device), PJRT C API ${client.apiVersion.major}.${client.apiVersion.minor}`,
  );

  const exe = await client.compile(`
    func.func @main(%x: tensor<2x3xf32>, %w: tensor<3x2xf32>) -> tensor<2x2xf32> {
      %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
             : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
      return %0 : tensor<2x2xf32>
    }`);
  const x = await client.upload(new Float32Array([1, 2, 3, 4, 5, 6]), [2, 3]);
  const w = await client.upload(new Float32Array([1, 0, 0, 1, 1, 1]), [3, 2]);
  const [y] = await exe.execute([x, w]);
  console.log(y.dims, await y.toHost()); // [ 2, 2 ] Float32Array(4) [ 4, 5, 10, 11 ]
  client.dispose(); // disposes x, w, y and exe too
}

main();
