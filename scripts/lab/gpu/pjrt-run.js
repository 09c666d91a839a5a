'use strict';
/**
 * pjrt-score's half of bench:gpu, one configuration per process (so peak RSS
 * is its own):
 *
 *   node scripts/lab/gpu/pjrt-run.js --model DIR --inputs FILE --out FILE
 *        [--plugin SO] [--precision highest|default] [--weights f32|bf16|...]
 *        [--repeats N] [--serial-items N] [--disk-cache DIR] [--options JSON]
 *        [--prefix-attention joint|kb<keys>w|kb<keys>u|cudnn|cudnn_ownhlo|...] [--causal-attention square|qc<n>|cudnn]
 *        [--batching invariant|cross-request] [--methods packed,prefix,serial,one-at-a-time,8-concurrent]
 *        [--emit-only 1]
 *
 * --emit-only 1 builds the configuration's programs for the workloads'
 * shapes (prefill, extend, the packed plan's fused pass, a cross-request pass
 * of 8 queries) without a device, and prints the custom calls they would
 * emit; a `cudnn` form is built as for the plugin it is pinned to when the
 * given plugin is not that one (what the CUDA run would send).
 *
 * Runs, on the inputs of ./inputs.js: the target workload with each plan
 * (packed, prefix, serial on a subset of items), timed after a warm-up, with
 * the prefix cache off so every request pays its query; the first request of
 * the target shape (compiles, or loads from the disk cache when warm); and the
 * pr workload one request at a time and 8 concurrent callers. Writes one JSON
 * file: the rows (label-softmax scores included, for parity) and the peak RSS
 * of the process against that of a process that only created the client.
 * --methods narrows the timed rows to those named (every one by default; the
 * first request always runs).
 */
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..', '..', '..');
const { Scorer, Client } = require(path.join(root, 'dist'));
const { parseCausalAttentionTag, parsePrefixAttentionTag, decoderPrefill, decoderExtend, decoderFused } = require(
  path.join(root, 'dist', 'hlo'),
);
const { configFromHf } = require(path.join(root, 'dist', 'model'));
const { CUDNN_PINNED_PLUGIN } = require(path.join(root, 'dist', 'hlo'));
const { platformFacts } = require(path.join(root, 'dist', 'scoring', 'platform'));
const { platformFactsOverride, withOverride } = require(path.join(root, 'dist', 'scoring', 'platform'));

function args(argv) {
  const out = { precision: 'highest', weights: 'f32', repeats: 5, serialItems: 16 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '').replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    out[key] = argv[i + 1];
  }
  for (const k of ['model', 'inputs', 'out']) if (!out[k]) throw new Error(`--${k} is required`);
  out.repeats = Number(out.repeats);
  out.serialItems = Number(out.serialItems);
  const methods = ['packed', 'prefix', 'serial', 'one-at-a-time', '8-concurrent'];
  out.methods = out.methods ? out.methods.split(',') : methods;
  const unknown = out.methods.filter((m) => !methods.includes(m));
  if (unknown.length) throw new Error(`--methods: ${unknown.join(', ')} not among ${methods.join(', ')}`);
  return out;
}

const { peakRss, rssBreakdown } = require('./memory');
const { benchScorerOptions } = require('./scorer-options');
const { upperMedian } = require('../../lib/median');

/**
 * --breakdown 1: wall time inside the runtime's uploads, executions and
 * downloads (wrapped on their prototypes), so a timed section splits into
 * device-facing calls and the rest (planning, inputs, scores, queueing).
 */
function timeRuntimeCalls() {
  const { Executable, DeviceBuffer, Client: ClientClass } = require(path.join(root, 'dist', 'runtime'));
  const spent = { upload: 0, execute: 0, toHost: 0, uploads: 0, executes: 0, toHosts: 0 };
  const wrap = (proto, method, key) => {
    const original = proto[method];
    proto[method] = async function (...xs) {
      const t0 = performance.now();
      try {
        return await original.apply(this, xs);
      } finally {
        spent[key] += performance.now() - t0;
        spent[`${key}s`] += 1;
      }
    };
  };
  wrap(ClientClass.prototype, 'upload', 'upload');
  wrap(Executable.prototype, 'execute', 'execute');
  wrap(DeviceBuffer.prototype, 'toHost', 'toHost');
  return () => ({ ...spent });
}
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(q * xs.length) - 1)];

async function timed(fn) {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

/** The custom calls each of the configuration's programs would emit, printed; nothing runs. */
function emitOnly(a, inputs, extra) {
  const config = configFromHf(JSON.parse(fs.readFileSync(path.join(a.model, 'config.json'), 'utf8')));
  const pin = (form) =>
    form && form.kind === 'cudnn' && !form.standIn ? { ...form, pluginVersion: CUDNN_PINNED_PLUGIN.version } : form;
  // The programs as the CUDA plugin would get them: its platform facts (and PJRT_SCORE_PLATFORM_FACTS).
  const facts = withOverride(platformFacts('cuda'), platformFactsOverride());
  const options = {
    weights: a.weights === 'bf16' ? 'bf16' : 'f32',
    bf16Matrices: facts.bf16Matrices,
    bf16Products: facts.bf16Products,
    ...(a.precision === 'bf16'
      ? { dotOperands: 'bf16' }
      : { dotPrecision: a.precision === 'default' ? 'DEFAULT' : 'HIGHEST' }),
    prefixAttention: pin(extra.prefixAttention),
    causalAttention: pin(extra.causalAttention),
  };
  const round8 = (n) => Math.ceil(n / 8) * 8;
  const target = inputs.workloads.target.requests[0];
  const pr = inputs.workloads.pr.requests[0];
  const [p, n, l] = [round8(target.query.length), target.items.length, round8(target.items[0].length)];
  const programs = [
    ['prefill', () => decoderPrefill(config, { prefix: p, labels: inputs.labels.length }, options)],
    [
      'extend',
      () => decoderExtend(config, { prefix: p, items: n, itemLength: l, labels: inputs.labels.length }, options),
    ],
    [
      'packed (fused pass)',
      () => decoderFused(config, { prefix: p, items: n, itemLength: l, labels: inputs.labels.length }, options),
    ],
    [
      'cross-request pass of 8',
      () =>
        decoderFused(
          config,
          {
            groups: 8,
            prefix: round8(pr.query.length),
            items: pr.items.length,
            itemLength: round8(pr.items[0].length),
            labels: inputs.labels.length,
          },
          options,
        ),
    ],
  ];
  const shown = new Set();
  let total = 0;
  for (const [what, build] of programs) {
    let prog;
    try {
      prog = build();
    } catch (err) {
      process.stdout.write(`${what}: cannot build: ${err.message}\n`);
      process.exitCode = 1;
      continue;
    }
    const calls = prog.text.split('\n').filter((x) => x.includes('stablehlo.custom_call'));
    total += calls.length;
    process.stdout.write(`${what}: ${prog.name}, ${calls.length} custom calls\n`);
    for (const call of calls) {
      const key = call.replace(/^\s*%[^=]*= /, '').replace(/\(%[^)]*\)/, '()');
      if (shown.has(key)) continue;
      shown.add(key);
      process.stdout.write(`  ${call.trim()}\n`);
    }
  }
  process.stdout.write(
    `emit-only: ${total} custom calls in ${programs.length} programs (${a.precision}/${a.weights}, prefix ${a.prefixAttention ?? 'platform default'}, causal ${a.causalAttention ?? 'platform default'})\n`,
  );
}

async function main() {
  const a = args(process.argv.slice(2));
  const runtimeCalls = a.breakdown === '1' ? timeRuntimeCalls() : null;
  const inputs = JSON.parse(fs.readFileSync(a.inputs, 'utf8'));
  const extra = a.options ? JSON.parse(a.options) : {};
  // Attention forms by tag (unset: the platform's, lib/scoring/platform/profiles.ts).
  if (a.prefixAttention) extra.prefixAttention = parsePrefixAttentionTag(a.prefixAttention);
  if (a.causalAttention) extra.causalAttention = parseCausalAttentionTag(a.causalAttention);
  if (a.batching) extra.batching = a.batching;
  if (a.emitOnly) return emitOnly(a, inputs, extra);

  // The reference process: one that only created the client.
  const probe = await Client.create(a.plugin ? { plugin: a.plugin } : {});
  const platform = probe.platformName;
  const device = probe.devices?.[0]?.kind ?? '';
  const clientRss = peakRss();
  probe.dispose();

  let loaded = {};
  const t0 = performance.now();
  const scorer = await Scorer.load({
    ...benchScorerOptions(a),
    log: (e) => e.event === 'model_loaded' && (loaded = e),
    ...extra,
  });
  const loadMs = performance.now() - t0;
  const loadRss = peakRss();
  const loadMemory = rssBreakdown();
  process.stderr.write(`memory after the load: ${JSON.stringify(loadMemory)}\n`);
  const config = { precision: a.precision, weights: scorer.weightType, ...extra };
  const rows = [];
  const row = (r) => {
    rows.push({ peer: 'pjrt-score', ...config, ...r });
    const items = r.items_per_s === undefined ? '' : ` ${r.items_per_s.toFixed(1)} items/s`;
    const lat = r.p50_ms === undefined ? '' : ` p50 ${r.p50_ms.toFixed(1)} ms p99 ${r.p99_ms.toFixed(1)} ms`;
    process.stderr.write(`pjrt-score ${a.precision}/${scorer.weightType} ${r.workload} ${r.method}:${items}${lat}\n`);
  };
  const request = (q, items, algorithm) => ({
    query: q.query,
    items: items ?? q.items,
    labelTokenIds: inputs.labels,
    applySoftmax: true,
    algorithm,
  });

  // First request of the target shape: compiles, or loads executables from a warm disk cache.
  const target = inputs.workloads.target.requests[0];
  const jit0 = { ...scorer.stats().jit };
  const first = await timed(() => scorer.score(request(target)));
  const jit1 = scorer.stats().jit;
  row({
    workload: 'target',
    method: 'first-request',
    algorithm: first.value.algorithm,
    ms: first.ms,
    compiles: jit1.compiles - jit0.compiles,
    compile_s: jit1.compileSeconds - jit0.compileSeconds,
    disk_hits: jit1.diskHits - jit0.diskHits,
  });

  for (const plan of ['packed', 'prefix', 'serial'].filter((m) => a.methods.includes(m))) {
    const items = plan === 'serial' ? target.items.slice(0, a.serialItems) : target.items;
    const r = request(target, items, plan);
    await scorer.score(r); // warm-up: compiles
    const times = [];
    let result;
    for (let i = 0; i < (plan === 'serial' ? Math.min(2, a.repeats) : a.repeats); i++) {
      const t = await timed(() => scorer.score(r));
      times.push(t.ms);
      result = t.value;
    }
    const ms = upperMedian(times);
    row({
      workload: 'target',
      method: plan,
      items: items.length,
      median_ms: ms,
      items_per_s: (1000 * items.length) / ms,
      scores: [result.scores],
    });
  }

  // The PR workload: one request at a time, then 8 concurrent callers.
  const pr = inputs.workloads.pr.requests;
  const prItems = pr.reduce((n, q) => n + q.items.length, 0);
  for (const q of pr) await scorer.score(request(q)); // warm-up
  if (a.methods.includes('one-at-a-time')) {
    const latencies = [];
    let scores;
    const t = await timed(async () => {
      for (let i = 0; i < a.repeats; i++) {
        scores = [];
        for (const q of pr) {
          const one = await timed(() => scorer.score(request(q)));
          latencies.push(one.ms);
          scores.push(one.value.scores);
        }
      }
    });
    row({
      workload: 'pr',
      method: 'one-at-a-time',
      items_per_s: (1000 * prItems * a.repeats) / t.ms,
      p50_ms: upperMedian(latencies),
      p99_ms: quantile(latencies, 0.99),
      scores,
    });
  }
  if (a.methods.includes('8-concurrent')) {
    const latencies = [];
    let scores;
    await Promise.all(pr.map((q) => scorer.score(request(q)))); // warm-up of whatever batching compiles
    const counted = (st) => ({
      ...st.runs,
      devicePasses: st.devicePasses,
      batchedPasses: st.batchedPasses,
      batchedRequests: st.batchedRequests,
    });
    const passes0 = counted(scorer.stats());
    const calls0 = runtimeCalls?.();
    const t = await timed(async () => {
      for (let i = 0; i < a.repeats; i++) {
        const results = await Promise.all(pr.map((q) => timed(() => scorer.score(request(q)))));
        for (const r of results) latencies.push(r.ms);
        scores = results.map((r) => r.value.scores);
      }
    });
    const passes1 = counted(scorer.stats());
    if (calls0) {
      const calls1 = runtimeCalls();
      const per = (k) => (calls1[k] - calls0[k]) / a.repeats;
      const split = {
        wall: t.ms / a.repeats,
        upload: per('upload'),
        execute: per('execute'),
        toHost: per('toHost'),
        uploads: per('uploads'),
        executes: per('executes'),
        toHosts: per('toHosts'),
      };
      process.stderr.write(
        `pjrt-score pr ${pr.length}-concurrent, ms per round of ${pr.length} requests: ${JSON.stringify(Object.fromEntries(Object.entries(split).map(([k, v]) => [k, Number(v.toFixed(2))])))}\n`,
      );
    }
    row({
      workload: 'pr',
      method: `${pr.length}-concurrent`,
      items_per_s: (1000 * prItems * a.repeats) / t.ms,
      p50_ms: upperMedian(latencies),
      p99_ms: quantile(latencies, 0.99),
      // Plans by kind, device passes and cross-request passes in the timed rounds, against the requests they served.
      runs: {
        ...Object.fromEntries(Object.keys(passes1).map((k) => [k, passes1[k] - passes0[k]])),
        requests: pr.length * a.repeats,
      },
      scores,
    });
  }

  const out = {
    platform,
    device,
    config,
    model: scorer.config,
    load_ms: loadMs,
    load_steps: loaded.steps,
    weight_bytes: loaded.weightBytes,
    client_peak_rss: clientRss,
    load_peak_rss: loadRss,
    load_memory: loadMemory,
    end_memory: rssBreakdown(),
    peak_rss: peakRss(),
    rows,
  };
  scorer.dispose();
  fs.writeFileSync(a.out, JSON.stringify(out));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
