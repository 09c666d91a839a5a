'use strict';
// What a Scorer picks by default on each platform, from the facts in lib/scoring/platform/profiles.ts:
// the precision 'auto' resolves to, the attention forms, the item-count ladder.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { choosePrecision } = require('../dist/scoring/platform/precision-choice');
const { platformFacts, defaultPrefixAttention, defaultCausalAttention } = require('../dist/scoring/platform');
const { isCudnnPinnedPlugin, unpinnedPluginNote } = require('../dist/scoring/platform/cudnn-pin');
const { bucketLadder, bucketFor } = require('../dist/scoring/planning/buckets');
const { CUDNN_PINNED_PLUGIN } = require('../dist/hlo');

test("precision 'auto' is bf16 on cuda (measured there), highest on a platform with no measurement; asked precisions pass through", (t) => {
  const cuda = choosePrecision('auto', 'cuda', null, 'f32');
  t.equal(cuda.precision, 'bf16');
  t.match(cuda.reason, /^auto: bf16 on cuda \(.*H100/, `reason: ${cuda.reason.slice(0, 80)}...`);
  t.equal(choosePrecision('auto', 'rocm', null, 'bf16').precision, 'highest', 'rocm: highest');
  for (const asked of ['highest', 'default', 'bf16'])
    t.equal(choosePrecision(asked, 'cuda', null, 'f32').precision, asked, `${asked} as asked`);
  t.end();
});

test('attention forms: cuDNN on cuda only where it may run (bf16 dots, the pinned plugin), else the platform forms', (t) => {
  const cuda = platformFacts('cuda');
  t.same(
    defaultPrefixAttention(cuda, { kernel: false, cudnn: true }),
    { kind: 'cudnn', joinPrefill: true },
    'cuda, cuDNN usable: prefix cudnn, the prefill joined',
  );
  t.same(
    defaultCausalAttention(cuda, { kernel: false, cudnn: true }),
    { kind: 'cudnn' },
    'cuda, cuDNN usable: causal cudnn',
  );
  t.same(
    defaultPrefixAttention(cuda, { kernel: false, cudnn: false }),
    { kind: 'joint' },
    'cuda, f32 dots or another plugin: joint',
  );
  t.same(
    defaultCausalAttention(cuda, { kernel: false, cudnn: false }),
    { kind: 'square' },
    'cuda, f32 dots or another plugin: square',
  );
  const cpu = platformFacts('cpu');
  t.same(
    defaultPrefixAttention(cpu, { kernel: true, cudnn: true }),
    { kind: 'kernel' },
    'cpu: the kernel, never cuDNN',
  );
  t.same(
    defaultPrefixAttention(cpu, { kernel: false, cudnn: false }),
    cpu.prefixAttention,
    'cpu without the kernel: its StableHLO form',
  );
  t.end();
});

test('the pinned plugin is told by the version.py beside it and the platform name', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-pin-'));
  const so = path.join(dir, 'xla_cuda_plugin.so');
  fs.writeFileSync(so, '');
  t.notOk(isCudnnPinnedPlugin(so, 'cuda'), 'no version.py: unknown version, not pinned');
  fs.writeFileSync(path.join(dir, 'version.py'), `_version = "${CUDNN_PINNED_PLUGIN.version}"\n`);
  t.ok(isCudnnPinnedPlugin(so, 'cuda'), `version ${CUDNN_PINNED_PLUGIN.version}, platform cuda`);
  t.ok(isCudnnPinnedPlugin(so, 'CUDA'), 'the platform name in any case');
  t.notOk(isCudnnPinnedPlugin(so, 'cpu'), 'another platform');
  fs.writeFileSync(path.join(dir, 'version.py'), '_version = "0.12.0"\n');
  t.notOk(isCudnnPinnedPlugin(so, 'cuda'), 'another release');
  const note = unpinnedPluginNote(so);
  t.ok(
    note.includes(`pinned to ${CUDNN_PINNED_PLUGIN.wheel} ${CUDNN_PINNED_PLUGIN.version}`) &&
      note.includes('version 0.12.0') &&
      note.includes('StableHLO forms run'),
    `the load log says why: ${note}`,
  );
  fs.rmSync(dir, { recursive: true, force: true });
  t.end();
});

test('item-count ladders: cuda and the CPU pad 10 items to 10 (1.25x rungs); at most one item padded up to 16, and no count by more than 1.25x', (t) => {
  const ladder = (p) => bucketLadder({ min: 1, max: 4096, steps: platformFacts(p).countSteps });
  for (const name of ['cuda', 'cpu']) {
    const l = ladder(name);
    t.equal(bucketFor(10, l), 10, `${name}: 10 -> 10`);
    // Against a plain loop: every count up to 4096 pads by at most 1.25x, and by at most one item up to 16.
    let worst = 1;
    for (let n = 1; n <= 4096; n++) {
      const b = bucketFor(n, l);
      worst = Math.max(worst, b / n);
      if (n <= 16 && b - n > 1) t.fail(`${name}: ${n} items pad to ${b}`);
    }
    t.ok(worst <= 1.25 + 1e-9, `${name}: worst padding ${worst.toFixed(3)}x <= 1.25x`);
  }
  t.end();
});

test("query-length ladders: the item lengths' rungs on both platforms (finer rungs are a knob: PJRT_SCORE_PLATFORM_FACTS)", (t) => {
  const ladder = (p) => bucketLadder({ min: 8, max: 8192, steps: platformFacts(p).queryTokenSteps, align: 4 });
  const items = bucketLadder({ min: 8, max: 8192, steps: [1.25, 1.5, 1.75], align: 4 });
  t.same(ladder('cpu'), items, 'cpu: the item-length ladder');
  t.same(ladder('cuda'), items, 'cuda: the item-length ladder');
  t.equal(bucketFor(300, ladder('cpu')), 320, 'cpu: 300 -> 320');
  // Against a plain loop: at most 1.25x padding from 32 tokens on.
  for (let n = 32; n <= 8192; n++)
    if (bucketFor(n, ladder('cpu')) > Math.ceil((n * 1.25) / 4) * 4)
      t.fail(`cpu: ${n} tokens pad to ${bucketFor(n, ladder('cpu'))}`);
  t.end();
});
