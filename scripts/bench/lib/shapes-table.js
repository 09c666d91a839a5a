'use strict';
// The five workloads of the shapes table (the long-query target, SGLang's PR
// shape, and three short-query shapes: RAG chunks, 100 x 100, one long
// document), each with the auto plan in each precision asked for (default:
// auto, then highest) and node-llama-cpp on the same GGUF: seconds, the ratio
// to node-llama-cpp, useful GFLOP/s and its share of the roof of the precision
// the run took (the f32 matmul roof for highest; the bf16 x bf16 -> f32 roof
// for bf16, where bench:runtime measured one). Each case in its own process.
// The PyTorch peer (scripts/bench/lib/torch-peer.js) runs each workload in f32 and
// bf16 in one Python process, after our runs of it: its label probabilities
// are checked against our 'highest' run's on the same request before it is
// timed, and each of our rows is compared with the peer in the same precision
// (bf16 with bf16, f32 with f32).
const path = require('node:path');
const { WORKLOADS, SHAPE_TABLE, usefulFlops } = require('./workloads');

/**
 * opts: { runJson, worker, llama: (workload, itemLimit) => llamaJson | null, roofs: { f32, bf16 },
 *   torch: (workload, itemLimit, reference) => torchPeer | null (reference: our 'highest' scores of the timed request),
 *   shapes: names, precisions: names, itemLimit: number | null (cut every workload: a smoke run) }
 * Returns { rows: [{ workload, precision, asked, seconds, gflops, roof, roofFraction, ratioToLlamaCpp, torchSeconds,
 *   ratioToTorch, attentionKernel, precisionReason }], peers: [{ workload, items, torch }] }.
 */
function runShapesTable(opts) {
  const rows = [];
  const peers = [];
  for (const name of opts.shapes) {
    const w = WORKLOADS[name];
    if (!w) throw new Error(`unknown workload ${name}; known: ${Object.keys(WORKLOADS).join(', ')}`);
    const items = opts.itemLimit ? Math.min(opts.itemLimit, w.items) : w.items;
    const llama = opts.llama(w, items);
    const llamaSeconds = llama ? llama.querySeconds + llama.itemSeconds : null;
    for (const asked of opts.precisions) {
      const r = opts.runJson(
        process.execPath,
        [opts.worker, name, 'auto', String(items)],
        `shapes: ${name} (${items} of ${w.items} items) precision ${asked}`,
        {
          BENCH_PRECISION: asked,
          BENCH_TIMED_SCORES: '1',
        },
      );
      const flops = usefulFlops(r.config, w, r.items);
      const gflops = flops / r.seconds / 1e9;
      const roof = r.precision === 'bf16' ? opts.roofs.bf16 : opts.roofs.f32;
      rows.push({
        workload: name,
        description: w.description,
        items: r.items,
        asked,
        precision: r.precision,
        precisionReason: r.precisionReason,
        attentionKernel: r.attentionKernel,
        algorithm: r.algorithm,
        seconds: r.seconds,
        cpuSeconds: r.cpuSeconds,
        gflops,
        roof: roof ?? null,
        roofFraction: roof ? gflops / roof : null,
        llamaCppSeconds: llamaSeconds,
        llamaCppScaled: llama ? Boolean(llama.scaled) : false,
        ratioToLlamaCpp: llamaSeconds ? llamaSeconds / r.seconds : null,
        scores: r.scores,
      });
    }
    const own = rows.filter((row) => row.workload === name);
    const highest = own.find((row) => row.precision === 'highest');
    const torch = opts.torch ? opts.torch(w, items, highest ? highest.scores : null) : null;
    if (torch) {
      peers.push({ workload: name, items, torch });
      for (const row of own) {
        const peer = torch[row.precision === 'bf16' ? 'bf16' : 'f32'];
        row.torchSeconds = peer ? peer.seconds : null;
        row.ratioToTorch = peer ? peer.seconds / row.seconds : null;
      }
    }
    for (const row of own) delete row.scores;
  }
  return { rows, peers };
}

function printShapesTable(rows, roofs, fmt, peers = []) {
  console.log('');
  console.log(
    `the shapes table's workloads (auto plan; roofs: f32 ${fmt(roofs.f32)} GFLOP/s, bf16 ${roofs.bf16 ? `${fmt(roofs.bf16)} GFLOP/s` : 'not measured (no bf16 matrix units)'}):`,
  );
  console.log(
    '| workload (query / items x tokens) | precision (asked) | attention kernel | seconds | node-llama-cpp s | x node-llama-cpp | PyTorch s (same precision) | x PyTorch | useful GFLOP/s | of its roof |',
  );
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of rows) {
    const w = WORKLOADS[r.workload];
    const shape = `${r.workload} ${w.queryTokens} / ${r.items}${r.items < w.items ? ` (of ${w.items})` : ''} x ${w.itemTokens}`;
    const kernel = r.attentionKernel ? r.attentionKernel.used : '-';
    const torch = r.torchSeconds ? `${fmt(r.torchSeconds, 3)} (${r.precision === 'bf16' ? 'bf16' : 'f32'})` : '-';
    console.log(
      `| ${shape} | ${r.precision} (${r.asked}) | ${kernel} | ${fmt(r.seconds, 3)} | ${r.llamaCppSeconds ? `${fmt(r.llamaCppSeconds, 3)}${r.llamaCppScaled ? ' (scaled)' : ''}` : '-'} | ${r.ratioToLlamaCpp ? `${fmt(r.ratioToLlamaCpp, 2)}x` : '-'} | ${torch} | ${r.ratioToTorch ? `${fmt(r.ratioToTorch, 2)}x` : '-'} | ${fmt(r.gflops, 0)} | ${r.roofFraction ? `${fmt(100 * r.roofFraction, 0)}% (${r.precision === 'bf16' ? 'bf16' : 'f32'})` : '-'} |`,
    );
  }
  if (peers.length) {
    const t = peers[0].torch;
    console.log('');
    console.log(
      `the PyTorch peer (torch ${t.torch}, transformers ${t.transformers}, ${t.threads} threads; its label probabilities against ours in 'highest', checked before it was timed):`,
    );
    console.log(
      '| workload | f32 s | f32 max / mean / max relative diff | bf16 s | bf16 max / mean / max relative diff |',
    );
    console.log('| --- | --- | --- | --- | --- |');
    const cell = (p) =>
      p
        ? [
            fmt(p.seconds, 3),
            p.maxDiff === undefined
              ? '-'
              : `${p.maxDiff.toExponential(1)} / ${p.meanDiff.toExponential(1)} / ${p.maxRelativeDiff.toExponential(1)}`,
          ]
        : ['-', '-'];
    for (const p of peers)
      console.log(
        `| ${p.workload} (${p.items} items) | ${cell(p.torch.f32).join(' | ')} | ${cell(p.torch.bf16).join(' | ')} |`,
      );
  }
  const reasons = [...new Set(rows.filter((r) => r.asked === 'auto').map((r) => r.precisionReason))];
  for (const reason of reasons) console.log(`precision auto: ${reason}`);
}

module.exports = { runShapesTable, printShapesTable, SHAPE_TABLE, workerPath: path.join(__dirname, 'pjrt-worker.js') };
