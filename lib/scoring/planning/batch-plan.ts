/**
 * Cross-request batching as data: several requests, each with its own query,
 * items and labels, put into shared device passes of the grouped fused
 * program (ProgramKey `groups` G > 1). A pass carries up to G requests, one
 * per group; each group attends to its own query only, so a request's scores
 * are its own, computed by another program than the one it runs alone
 * (within f32 rounding of it, not bit for bit: docs/design.md "Batch invariance" and
 * docs/scorer-api.md "Batching").
 *
 * Like makePlan, this depends on the shapes and the Scorer's fixed sizing
 * only. A request joins a pass when it has items, its query comes first, and
 * its whole request fits in one group of one pass; the rest run alone, each
 * on its own plan. Requests of different label buckets never share a pass.
 */
import { bucketFor } from './buckets';
import { bucketAtMost, ProgramKey, programKeyString, RequestShape, Sizing } from './plan';

/** One request in a pass: row r of its group carries the request's item `items[r]`. */
export interface BatchGroup {
  /** Index into the batch's requests. */
  readonly request: number;
  readonly items: readonly number[];
}

export interface BatchPass {
  /** The grouped fused program; its sizes are per group. */
  readonly program: Extract<ProgramKey, { program: 'decoder_fused' }>;
  /** Group g carries groups[g]; groups past its length are padding (query length 0, no items). */
  readonly groups: readonly BatchGroup[];
}

export interface BatchPlan {
  readonly passes: readonly BatchPass[];
  /** Requests that run their own plan (makePlan): they cannot join, or no other request could share their pass. */
  readonly alone: readonly number[];
}

/** A request's sizes as one group: per-group buckets, rows and attention score bytes. */
interface GroupShape {
  readonly request: number;
  readonly prefix: number;
  readonly items: number;
  readonly itemLength: number;
  readonly labels: number;
}

/** Rows, item rows and score bytes of a pass of `groups` groups of these (per-group) sizes. */
function passSize(
  groups: number,
  s: Omit<GroupShape, 'request' | 'labels'>,
  numHeads: number,
): { rows: number; itemRows: number; scoreBytes: number } {
  const itemRows = s.items * s.itemLength;
  const keys = s.prefix * s.prefix + itemRows * (s.prefix + s.itemLength);
  return {
    rows: groups * (s.prefix + itemRows),
    itemRows: groups * itemRows,
    scoreBytes: groups * numHeads * keys * 4,
  };
}

function fits(groups: number, s: Omit<GroupShape, 'request' | 'labels'>, sizing: Sizing): boolean {
  const size = passSize(groups, s, sizing.numHeads);
  const { budget } = sizing;
  return (
    size.rows <= budget.batchRowsPerPass &&
    size.itemRows <= budget.tokensPerPass &&
    size.scoreBytes <= budget.scoreBytesPerPass
  );
}

/**
 * The request as one group, or null when it cannot join a batch. The query
 * is bucketed on the item-length ladder (finer than the token ladder): in a
 * batch, query padding is paid once per group, like item padding per item.
 */
function groupShape(request: number, shape: RequestShape, sizing: Sizing): GroupShape | null {
  if (shape.itemFirst || shape.queryLength === 0 || shape.itemLengths.length === 0) return null;
  const { ladders } = sizing;
  const top = (ladder: readonly number[]): number => ladder[ladder.length - 1];
  const longest = Math.max(1, ...shape.itemLengths);
  const tooLong = shape.queryLength > top(ladders.itemTokens) || longest > top(ladders.itemTokens);
  if (tooLong || shape.itemLengths.length > top(ladders.counts) || shape.labelCount > top(ladders.labels)) return null;
  const g: GroupShape = {
    request,
    prefix: bucketFor(Math.max(1, shape.queryLength), ladders.itemTokens, 'query length'),
    items: bucketFor(shape.itemLengths.length, ladders.counts, 'item count'),
    itemLength: bucketFor(longest, ladders.itemTokens, 'item length'),
    labels: bucketFor(shape.labelCount, ladders.labels, 'label count'),
  };
  return fits(1, g, sizing) ? g : null;
}

/** The per-group sizes of a pass: the largest of its members'. */
function envelope(members: readonly GroupShape[]): Omit<GroupShape, 'request' | 'labels'> {
  return {
    prefix: Math.max(...members.map((m) => m.prefix)),
    items: Math.max(...members.map((m) => m.items)),
    itemLength: Math.max(...members.map((m) => m.itemLength)),
  };
}

/**
 * Packs one label bucket's requests, sorted by size, into passes: a pass
 * grows while its bucketed group count G still fits the budget with every
 * member's sizes; a full pass whose count is not a rung of the ladder gives
 * its last members to the next pass (so only the last pass pads groups). A
 * pass of one request is no batch: that request runs alone.
 */
function pack(
  members: GroupShape[],
  sizing: Sizing,
  shapes: readonly RequestShape[],
): { passes: BatchPass[]; alone: number[] } {
  const counts = sizing.ladders.counts;
  const order = [...members].sort(
    (a, b) => a.prefix - b.prefix || a.itemLength - b.itemLength || a.items - b.items || a.request - b.request,
  );
  const passes: BatchPass[] = [];
  const alone: number[] = [];
  let start = 0;
  while (start < order.length) {
    let end = start + 1;
    while (
      end < order.length &&
      fits(bucketFor(end - start + 1, counts, 'group count'), envelope(order.slice(start, end + 1)), sizing)
    )
      end++;
    if (end < order.length) end = start + bucketAtMost(end - start, counts);
    const taken = order.slice(start, end);
    start = end;
    if (taken.length === 1) {
      alone.push(taken[0].request);
      continue;
    }
    const size = envelope(taken);
    passes.push({
      program: {
        program: 'decoder_fused',
        groups: bucketFor(taken.length, counts, 'group count'),
        ...size,
        labels: taken[0].labels,
      },
      groups: taken.map((m) => ({ request: m.request, items: shapes[m.request].itemLengths.map((_, i) => i) })),
    });
  }
  return { passes, alone };
}

/** The passes that score these requests together; see the file comment. */
export function makeBatchPlan(shapes: readonly RequestShape[], sizing: Sizing): BatchPlan {
  const alone: number[] = [];
  const byLabels = new Map<number, GroupShape[]>();
  shapes.forEach((shape, i) => {
    const g = groupShape(i, shape, sizing);
    if (!g) alone.push(i);
    else byLabels.set(g.labels, [...(byLabels.get(g.labels) ?? []), g]);
  });
  const passes: BatchPass[] = [];
  for (const members of byLabels.values()) {
    const packed = pack(members, sizing, shapes);
    passes.push(...packed.passes);
    alone.push(...packed.alone);
  }
  return { passes, alone: alone.sort((a, b) => a - b) };
}

/**
 * The grouped programs that batches of 2 to `maxRequests` requests of this
 * one shape run (what warmup compiles for a shape when batching is on).
 */
export function batchPrograms(shape: RequestShape, sizing: Sizing, maxRequests: number): ProgramKey[] {
  const programs = new Map<string, ProgramKey>();
  if (!canJoinBatch(shape, sizing)) return [];
  for (let k = 2; k <= maxRequests; k++) {
    for (const pass of makeBatchPlan(new Array<RequestShape>(k).fill(shape), sizing).passes)
      programs.set(programKeyString(pass.program), pass.program);
  }
  return [...programs.values()];
}

/** Whether a request of this shape can share a pass with others (it may still run alone when none fits with it). */
export function canJoinBatch(shape: RequestShape, sizing: Sizing): boolean {
  return groupShape(0, shape, sizing) !== null;
}
