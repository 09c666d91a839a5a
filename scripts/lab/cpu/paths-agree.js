#!/usr/bin/env node
'use strict';
// Same scores on every bf16 path (the AMX host check, scripts/lab/cpu/amx-host-check.sh):
// one request of the SGLang PR shape (a 300-token query, 10 items of 20
// tokens, two labels, softmax over them) scored in bf16 on each bf16 kernel
// path this CPU has tried (PJRT_SCORE_KERNEL_ISA caps each call), against
// true f32 ('highest'): max and mean |diff| of the label probabilities,
// within the accuracy gate (docs/design.md: max <= 0.02, mean <= 0.01), and
// each path against the one below it. Exits 1 when a gate fails.
//
//   PJRT_SCORE_MODEL=DIR node scripts/lab/cpu/paths-agree.js
const { Scorer } = require('../../../dist');
const { attentionKernelPaths, KERNEL_ISAS } = require('../../../dist/runtime');

function request(vocab) {
  let s = 12345;
  const token = () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return 3 + (s % (Math.min(vocab, 32000) - 3));
  };
  return {
    query: Array.from({ length: 300 }, token),
    items: Array.from({ length: 10 }, () => Array.from({ length: 20 }, token)),
    labelTokenIds: [token(), token()],
    applySoftmax: true,
  };
}

function diff(a, b) {
  const d = a.flat().map((x, i) => Math.abs(x - b.flat()[i]));
  return { max: Math.max(...d), mean: d.reduce((x, y) => x + y, 0) / d.length };
}

(async () => {
  const highest = await Scorer.load({ precision: 'highest', diskCache: false });
  const req = request(highest.config ? highest.config.vocabSize : 32000);
  const reference = (await highest.score(req)).scores;
  highest.dispose();
  const bf16 = await Scorer.load({ precision: 'bf16', diskCache: false });
  const paths = new Map();
  const tried = attentionKernelPaths(64).tried;
  for (const isa of KERNEL_ISAS.slice(0, KERNEL_ISAS.indexOf(tried) + 1)) {
    process.env.PJRT_SCORE_KERNEL_ISA = isa;
    const path = attentionKernelPaths(64).bf16;
    if (!paths.has(path)) paths.set(path, (await bf16.score(req)).scores);
  }
  delete process.env.PJRT_SCORE_KERNEL_ISA;
  bf16.dispose();
  let ok = true;
  let below = null;
  for (const [path, scores] of paths) {
    const g = diff(scores, reference);
    const pass = g.max <= 0.02 && g.mean <= 0.01;
    ok = ok && pass;
    const vsBelow = below ? `; against ${below.path}: max ${diff(scores, below.scores).max.toExponential(2)}` : '';
    console.log(
      `bf16 path ${path}: against highest max ${g.max.toExponential(2)}, mean ${g.mean.toExponential(2)} ${pass ? 'within' : 'OUTSIDE'} the gate${vsBelow}`,
    );
    below = { path, scores };
  }
  process.exit(ok ? 0 : 1);
})().catch((e) => {
  console.error(e);
  process.exit(2);
});
