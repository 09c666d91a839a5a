/**
 * Items over a prefix in the joint form (PrefixAttention `joint`,
 * prefix.ts; what every plugin runs): each item token against [valid
 * prefix keys ; its own earlier keys], one softmax over both.
 */
import { FunctionBuilder } from '../builder/builder';
import { HloValue } from '../builder/core';
import { TensorType } from '../builder/types';
import { AttentionOptions, ItemsOverPrefixInputs, itemOutputs, itemsOverPrefixLayout, resolveScale } from './layout';
import { attendJointly } from './joint-softmax';
import {
  MASKED_SCORE,
  capScores,
  causalWindowVisible,
  checkShaping,
  maskBias,
  prefixKeysVisible,
  shapesScores,
} from './score-shaping';

/**
 * Item tokens against [valid prefix keys ; their own earlier keys]:
 * -> [N, L, Hq, D]. Batched over items, never across them. Grouped (a
 * prefixLength of s32[G]): -> [G, N, L, Hq, D], each item against its own
 * group's prefix only.
 */
export function itemsOverPrefixAttention(
  f: FunctionBuilder,
  x: ItemsOverPrefixInputs,
  opts?: AttentionOptions,
): HloValue {
  const { lead, axes, hkv, group, d, n, l, p } = itemsOverPrefixLayout('itemsOverPrefixAttention', x);
  const g = lead.length;
  const shaping = checkShaping('itemsOverPrefixAttention', opts);

  const qGrouped = f.reshape(f.multiply(x.itemQ, resolveScale(opts, d)), [...lead, n, l, hkv, group, d]);

  // Prefix key p is visible iff p < prefixLength. That mask rides in the QK
  // product as one more contraction column, [q * scale, 1] . [k, bias] with
  // bias 0 or MASKED_SCORE, so the [Hq, N, L, P] scores come out of the GEMM already
  // masked: a select there would make XLA CPU write a masked copy of the
  // largest tensor of the program before reducing it. A real row always sees
  // its own key, so its max is finite and exp(MASKED_SCORE - max) is exactly 0.
  // A soft cap must see the raw scores: then the mask is a bias added after it
  // (score-shaping.ts), as is a window's, which depends on the item row.
  const fold = shaping.softcap === undefined;
  const prefixKeyValid = f.lt(
    f.iota(TensorType.s32([...lead, p]), g),
    f.broadcastInDim(x.prefixLength, [...lead, p], axes),
  );
  const bias = fold
    ? f.select(
        prefixKeyValid,
        f.full(TensorType.f32([...lead, p]), 0),
        f.full(TensorType.f32([...lead, p]), MASKED_SCORE),
      )
    : f.full(TensorType.f32([...lead, p]), 0);
  const qWithOne = f.concatenate([qGrouped, f.full(TensorType.f32([...lead, n, l, hkv, group, 1]), 1)], g + 4);
  const kWithBias = f.concatenate([x.prefixK, f.broadcastInDim(bias, [...lead, p, hkv, 1], [...axes, g])], g + 2);
  // Scores against the prefix: [Hkv, N, L, G, P].
  let prefixScores = capScores(
    f,
    f.dotGeneral(qWithOne, kWithBias, {
      lhsBatch: [...axes, g + 2],
      rhsBatch: [...axes, g + 1],
      lhsContract: [g + 4],
      rhsContract: [g + 2],
    }),
    shaping.softcap,
  );
  const prefixVisible = prefixKeysVisible(f, lead, l, p, x.prefixLength, shaping.window, !fold);
  if (prefixVisible)
    prefixScores = f.add(
      prefixScores,
      f.broadcastInDim(maskBias(f, prefixVisible), prefixScores.dims, [...axes, g + 2, g + 4]),
    );
  // Scores against the item's own keys, batched over (kv head, item): [Hkv, N, L, G, Lk].
  const ownScores = capScores(
    f,
    f.dotGeneral(qGrouped, x.itemK, {
      lhsBatch: [...axes, g + 2, g],
      rhsBatch: [...axes, g + 2, g],
      lhsContract: [g + 4],
      rhsContract: [g + 3],
    }),
    shaping.softcap,
  );
  // Own key j' is visible iff j' <= j (and j - j' < window).
  const causal = shapesScores(shaping)
    ? causalWindowVisible(f, l, l, 0, shaping.window)
    : f.le(f.iota(TensorType.s32([l, l]), 1), f.iota(TensorType.s32([l, l]), 0));

  const out = attendJointly(f, [
    {
      scores: prefixScores,
      // [Hkv, N, L, G, P] x [P, Hkv, D] -> [Hkv, N, L, G, D]
      weightedValues: (w) =>
        f.dotGeneral(w, x.prefixV, {
          lhsBatch: [...axes, g],
          rhsBatch: [...axes, g + 1],
          lhsContract: [g + 4],
          rhsContract: [g],
        }),
    },
    {
      scores: ownScores,
      visible: f.broadcastInDim(causal, ownScores.dims, [g + 2, g + 4]),
      // [Hkv, N, L, G, Lk] x [N, Lk, Hkv, D] -> [Hkv, N, L, G, D]
      weightedValues: (w) =>
        f.dotGeneral(w, x.itemV, {
          lhsBatch: [...axes, g, g + 1],
          rhsBatch: [...axes, g + 2, g],
          lhsContract: [g + 4],
          rhsContract: [g + 1],
        }),
    },
  ]);
  return itemOutputs(f, out, x.itemLengths, lead.length);
}
