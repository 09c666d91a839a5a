/**
 * The executor of cross-request passes (batch-plan.ts): runs each pass of the
 * grouped fused program and splits its rows back per request, writing each
 * item's label log-probabilities into that request's own flat array,
 * [item][label] in request order (what runPlan returns for one request). It
 * chooses nothing: groups, buckets and rows are the plan's. Padding groups
 * (query length 0, no items, label 0) compute finite garbage nobody reads.
 */
import { BatchPass } from '../planning/batch-plan';
import { DecoderRunner, HostInput, PassObserver, s32 } from './decoder-runner';
import { normalizeOf, PlanInput } from './run-plan';

/** One request's label logprobs, filled pass by pass. */
type BatchOutputs = Float32Array[];

/**
 * The six inputs of a grouped pass: queries [G, P], query lengths [G], items [G, N, L], item lengths [G, N], labels [G,
 * B], normalize [].
 */
function passInputs(pass: BatchPass, inputs: readonly PlanInput[]): HostInput[] {
  const { groups: G, prefix: P, items: N, itemLength: L, labels: B } = pass.program;
  const queries = new Int32Array(G * P);
  const queryLengths = new Int32Array(G);
  const items = new Int32Array(G * N * L);
  const itemLengths = new Int32Array(G * N);
  const labels = new Int32Array(G * B);
  pass.groups.forEach((group, g) => {
    const input = inputs[group.request];
    queries.set(input.queryTokens, g * P);
    queryLengths[g] = input.queryTokens.length;
    group.items.forEach((item, r) => {
      items.set(input.itemTokens[item], (g * N + r) * L);
      itemLengths[g * N + r] = input.itemTokens[item].length;
    });
    labels.set(input.labels, g * B);
  });
  const members = pass.groups.map((group) => inputs[group.request]);
  return [
    s32(queries, [G, P]),
    s32(queryLengths, [G]),
    s32(items, [G, N, L]),
    s32(itemLengths, [G, N]),
    s32(labels, [G, B]),
    normalizeOf(members),
  ];
}

/**
 * Runs the passes; `outputs[request]` must be a [items * labels] array for
 * every request the passes name. An empty item is read at its query's last
 * token: its group's row of prefix_logprobs. `onPass` is told of each pass that ends.
 */
export async function runBatchPasses(
  passes: readonly BatchPass[],
  inputs: readonly PlanInput[],
  outputs: BatchOutputs,
  runner: DecoderRunner,
  onPass?: PassObserver,
): Promise<void> {
  for (const pass of passes) {
    const { items: N, labels: B } = pass.program;
    const [prefixOut, itemOut] = await runner.run(pass.program, passInputs(pass, inputs), onPass);
    try {
      const [prefixRows, itemRows] = (await Promise.all([prefixOut.toHost(), itemOut.toHost()])) as [
        Float32Array,
        Float32Array,
      ];
      pass.groups.forEach((group, g) => {
        const input = inputs[group.request];
        const out = outputs[group.request];
        const Lb = input.labels.length;
        group.items.forEach((item, r) => {
          const from =
            input.itemTokens[item].length === 0 ? prefixRows.subarray(g * B) : itemRows.subarray((g * N + r) * B);
          out.set(from.subarray(0, Lb), item * Lb);
        });
      });
    } finally {
      prefixOut.dispose();
      itemOut.dispose();
    }
  }
}
