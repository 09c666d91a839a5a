/**
 * The weight type of a load: the one asked for, or for 'auto' (the default)
 * a 16-bit checkpoint's own bf16 where the dots read bf16 weights as they lie
 * (bf16 dots through the CPU's bf16 matmul kernel or on a GPU, f32 dots through
 * the CPU's f32 matmul kernel, which widens them exactly), else the
 * fastest on this platform that fits in memory. The order per platform comes from
 * measurements (docs/performance.md, "Weight precision"): on XLA CPU every
 * matmul runs in f32 and bf16/int8 weights are converted to f32 before their
 * dot, so f32 storage is the fastest wherever it fits; on GPUs bf16 is the
 * norm (the peers run in it), so it comes first there.
 */
import * as os from 'node:os';
import { DecoderDims, decoderWeightSpecs, int8Unsupported, WeightType } from '../hlo';
import { notableCpuFlags } from '../runtime/host-cpu';
import { elementCount } from '../util/dims';
import { ELEMENT_TYPES } from '../util/element-types';
import type { StoredMatrixType } from '../model/load';

export type WeightChoice = WeightType | 'auto';
export const WEIGHT_CHOICES: readonly WeightChoice[] = ['f32', 'bf16', 'int8', 'auto'];

export interface WeightTypeChoice {
  readonly weightType: WeightType;
  /** Asked for, or chosen by 'auto'. */
  readonly auto: boolean;
  /** Why, in a sentence (logs, bench output). */
  readonly reason: string;
}

export interface WeightHost {
  /** client.platformName: 'cpu', 'cuda', 'rocm', ... */
  readonly platform: string;
  readonly config: DecoderDims & { readonly tiedEmbeddings?: boolean };
  /** Bytes the weights may take; default half the host memory on the CPU (device memory is host memory there). */
  readonly memoryBytes?: number;
  /** CPU flags (notableCpuFlags()); read from the host by default. */
  readonly cpuFlags?: readonly string[];
  /** How the checkpoint stores its matrices; default f32. */
  readonly matrixType?: StoredMatrixType;
  /**
   * The dots read bf16 weights as they lie: bf16 dots (the CPU's bf16 matmul kernel, a GPU), or the CPU's f32 matmul
   * kernel where it takes every layer matrix (it widens them exactly); default false.
   */
  readonly readsBf16?: boolean;
}

/** Device bytes of the weights in a weight type (a tied LM head counted once). */
export function weightBytes(config: WeightHost['config'], type: WeightType): number {
  return decoderWeightSpecs(config, type)
    .filter((s) => !(s.tiedTo !== undefined && config.tiedEmbeddings))
    .reduce((sum, s) => sum + elementCount(s.dims) * ELEMENT_TYPES[s.elementType].bytes, 0);
}

/** Fastest first, per platform, with the reason (measured on the CPU; the GPU order is the peers' practice). */
function preference(platform: string, flags: readonly string[]): { order: WeightType[]; why: string } {
  if (platform === 'cpu') {
    const bf16Hw = flags.filter((f) => f === 'avx512_bf16' || f === 'amx_bf16');
    const note = bf16Hw.length
      ? ` (this CPU has ${bf16Hw.join(', ')}: where bf16 dots run through the addon's matmul kernel, ` +
        `the load packs the f32 matrices into bf16 for it)`
      : '';
    return {
      order: ['f32', 'bf16', 'int8'],
      why:
        `on the CPU bf16/int8 weights cost a conversion per layer in XLA's dots and f32 dots read f32, ` +
        `so f32 is fastest where it fits${note}`,
    };
  }
  return {
    order: ['bf16', 'f32', 'int8'],
    why: `on ${platform} bf16 weights halve memory traffic and are the peers' norm`,
  };
}

export function chooseWeightType(choice: WeightChoice, host: WeightHost): WeightTypeChoice {
  if (choice !== 'auto') return { weightType: choice, auto: false, reason: `asked for ${choice}` };
  const flags = host.cpuFlags ?? (host.platform === 'cpu' ? notableCpuFlags() : []);
  const kept = host.readsBf16 === true && host.matrixType === 'bf16';
  const preferred = kept
    ? {
        order: ['bf16', 'f32', 'int8'] as WeightType[],
        why: 'a bf16 checkpoint under dots that read bf16 weights as they lie: its own bits, no f32 copy',
      }
    : preference(host.platform, flags);
  // A model whose matrix inputs are not whole int8 blocks cannot be int8: out of the running, said why.
  const int8Note = int8Unsupported(host.config);
  const order = int8Note ? preferred.order.filter((t) => t !== 'int8') : preferred.order;
  const { why } = preferred;
  const noInt8 = int8Note ? `; not int8: ${int8Note}` : '';
  const memory = host.memoryBytes ?? (host.platform === 'cpu' ? os.totalmem() / 2 : Infinity);
  const fits = order.find((t) => weightBytes(host.config, t) <= memory);
  const gib = (b: number): string => `${(b / 2 ** 30).toFixed(1)} GiB`;
  if (fits === undefined) {
    const smallest = order[order.length - 1];
    return {
      weightType: smallest,
      auto: true,
      reason:
        `auto: no weight type fits in ${gib(memory)}; ` +
        `${smallest} is the smallest (${gib(weightBytes(host.config, smallest))})${noInt8}`,
    };
  }
  const skipped = order.slice(0, order.indexOf(fits)).map((t) => `${t} (${gib(weightBytes(host.config, t))})`);
  const fitNote = skipped.length ? `; ${skipped.join(', ')} would not fit in ${gib(memory)}` : '';
  return { weightType: fits, auto: true, reason: `auto: ${fits}: ${why}${fitNote}${noInt8}` };
}
