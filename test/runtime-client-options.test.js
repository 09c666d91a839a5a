'use strict';
// The client options each plugin gets unless the caller sets them
// (lib/runtime/client.ts defaultClientOptions; docs/gpu.md, 'Host memory').
const test = require('tape');
const path = require('node:path');
const { defaultClientOptions } = require('../dist/runtime/client');
const { Client } = require('..');
const { CPU_PLUGIN } = require('../dist/runtime');

test('the CPU plugin gets one device, the CUDA plugin a growing allocator, any other plugin nothing', (t) => {
  t.same(defaultClientOptions(CPU_PLUGIN.destination), { cpu_device_count: 1 });
  t.same(defaultClientOptions('/opt/x/pjrt_c_api_cpu_plugin.so'), { cpu_device_count: 1 }, 'a CPU plugin by name');
  for (const dir of [
    '/usr/lib/python3/site-packages/jax_plugins/xla_cuda13',
    '/c/plugins/jax-cuda13-pjrt-0.11.2/jax_plugins/xla_cuda12',
  ]) {
    t.same(defaultClientOptions(path.join(dir, 'xla_cuda_plugin.so')), { preallocate: false }, `CUDA plugin in ${dir}`);
  }
  t.same(defaultClientOptions('/opt/rocm/xla_rocm_plugin.so'), {}, 'another plugin: exactly what the caller gives');
  t.end();
});

test('options the caller gives go over the defaults', async (t) => {
  // The CPU plugin refuses a second device count only if it is not a positive integer: 1 explicitly
  // is the default restated, and the client comes up with one device either way.
  const client = await Client.create({ options: { cpu_device_count: 1 } });
  t.equal(client.devices.length, 1, 'one device');
  client.dispose();
  t.end();
});
