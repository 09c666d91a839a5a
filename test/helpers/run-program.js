'use strict';
// Compiles a built program (lib/hlo buildProgram's { text, inputs }), runs it
// once on host arrays (one per input, in order) and returns its outputs as
// host arrays; every device object it made is disposed.

async function runProgram(client, prog, inputs) {
  const exe = await client.compile(prog.text);
  const buffers = await Promise.all(prog.inputs.map((spec, i) => client.upload(inputs[i], spec.dims, spec.dtype)));
  try {
    const outs = await exe.execute(buffers);
    const host = await Promise.all(outs.map((o) => o.toHost()));
    outs.forEach((o) => o.dispose());
    return host;
  } finally {
    buffers.forEach((b) => b.dispose());
    exe.dispose();
  }
}

module.exports = { runProgram };
