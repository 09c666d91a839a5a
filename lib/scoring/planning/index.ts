/**
 * lib/scoring/planning: a request's shape becomes a plan of device passes,
 * with no device in sight. Sizes round up to bucket ladders (buckets.ts;
 * the Scorer's ladders: ladders.ts); a plan is serial, packed or prefix
 * (plan.ts); requests with different queries may share passes (batch-plan.ts);
 * the cost model picks the cheapest plan (selector.ts).
 * May import: platform (the budget and cost constants a plan is sized and costed by).
 */
export { bucketFor, bucketLadder, BucketOverflowError, DEFAULT_TOKEN_BUCKETS } from './buckets';
export { makePlan, programKeyString, shapeOf, type Sizing } from './plan';
export { canJoinBatch, makeBatchPlan } from './batch-plan';
export { choosePlan, costModelFor, type CostModel } from './selector';
