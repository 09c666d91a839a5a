/**
 * What 'auto' precision measures on the CPU (docs/design.md, 'Platforms and
 * precision'): the bf16 x bf16 -> f32 dots the passes would run (XLA's, or
 * the addon's bf16 matmul kernel where the platform facts take it) against the
 * true f32 dots they would run otherwise (XLA's, or the addon's f32 matmul
 * kernel), at
 * the model's largest projection ([2048 rows x hidden] x [hidden x
 * intermediate]), in the same process, alternating, the best of 9 rounds
 * each (a shared machine slows some rounds, and both precisions alike). CPU flags do not tell:
 * on an Intel Xeon with AVX512_BF16 but no AMX, XLA's bf16 dots ran at 0.6x
 * its f32 ones, on an AMD EPYC Zen 4 at 1.85x. Kept on disk by CPU identity,
 * core count, plugin and shape, so a machine measures once (about a second).
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { buildProgram, matmulBf16Kernel, matmulF32Kernel, TensorType } from '../../hlo';
import type { Client } from '../../runtime/client';
import type { DeviceBuffer } from '../../runtime/device-buffer';
import type { Executable } from '../../runtime/executable';
import { hostCpu } from '../../runtime/host-cpu';
import { cacheDir } from '../../util/cache-dir';
import { readCachedJson, writeCachedJson } from '../../util/cached-json';
import type { KernelPaths } from '../../runtime/kernel-paths';
import { BF16_DOT_ISAS, DOT_OPTIONS } from './precision-choice';

export interface DotSpeeds {
  /** [rows, hidden, intermediate]: the dot timed. */
  readonly shape: readonly [number, number, number];
  /** The best of the rounds, GFLOP/s (2·m·k·n per dot over wall time): what the machine gives when nothing else runs on it. */
  readonly f32Gflops: number;
  readonly bf16Gflops: number;
  /** Alternating rounds, each one f32 and one bf16 execution. */
  readonly rounds: number;
  /** Whose bf16 dots were timed: XLA's, or the addon's matmul kernel (lib/hlo/nn/matmul-kernel.ts). */
  readonly bf16Dots: 'xla' | 'kernel';
  /** Whose f32 dots were timed: XLA's, or the addon's f32 matmul kernel. */
  readonly f32Dots: 'xla' | 'kernel';
  /** 'disk': read from the file; 'measured': timed now. */
  readonly source: 'disk' | 'measured';
  readonly cores: number;
}

/** The rows of the dot timed: a pass's tokens. */
export const DOT_SPEED_ROWS = 2048;
const ROUNDS = 9;
const FILE_VERSION = 4;

/** Whose dots are timed: XLA's or the addon's kernels, for each precision. */
export interface DotsTimed {
  readonly bf16Dots: DotSpeeds['bf16Dots'];
  readonly f32Dots: DotSpeeds['f32Dots'];
}

const XLA_DOTS: DotsTimed = { bf16Dots: 'xla', f32Dots: 'xla' };

/** Where the speeds of `client` at `shape` are kept (by CPU identity, cores, plugin, shape and whose dots). */
export function dotSpeedsFile(client: Client, shape: readonly number[], dots: DotsTimed = XLA_DOTS): string {
  const tags = [...(dots.bf16Dots === 'kernel' ? ['kernel'] : []), ...(dots.f32Dots === 'kernel' ? ['f32kernel'] : [])];
  const key = [hostCpu().id, os.availableParallelism(), client.platformName, client.platformVersion, shape.join('x'), ...tags].join('|');
  return path.join(cacheDir(), 'dot-speed', `${createHash('sha256').update(key).digest('hex').slice(0, 20)}.json`);
}

function readSpeeds(file: string): DotSpeeds | null {
  const s = readCachedJson<DotSpeeds>(file, FILE_VERSION);
  return s && s.f32Gflops > 0 && s.bf16Gflops > 0 ? { ...s, source: 'disk' } : null;
}

async function seconds(exe: Executable, args: readonly DeviceBuffer[]): Promise<number> {
  const t0 = performance.now();
  const outs = await exe.execute(args);
  const s = (performance.now() - t0) / 1000;
  for (const o of outs) o.dispose();
  return s;
}


/**
 * The dot speeds of `client` for a model of `hidden` x `intermediate` projections, each precision through
 * XLA's dots or the addon's matmul kernel (`dots`): from disk, or measured now.
 */
export async function dotSpeeds(client: Client, hidden: number, intermediate: number, dots: DotsTimed = XLA_DOTS): Promise<DotSpeeds> {
  const { bf16Dots, f32Dots } = dots;
  const shape = [DOT_SPEED_ROWS, hidden, intermediate] as const;
  const file = dotSpeedsFile(client, shape, dots);
  const saved = readSpeeds(file);
  if (saved) return saved;
  const programs = (['highest', 'bf16'] as const).map((p) =>
    buildProgram(
      `dot_speed_${p}${(p === 'bf16' ? bf16Dots : f32Dots) === 'kernel' ? '_kernel' : ''}`,
      (f) => {
        const x = f.param(TensorType.f32([DOT_SPEED_ROWS, hidden]), 'x');
        const w = f.param(TensorType.f32([hidden, intermediate]), 'w');
        if (p === 'bf16' && bf16Dots === 'kernel') return { y: matmulBf16Kernel(f, x, f.reshape(w, [1, hidden, intermediate]), f.scalar(0, 's32')) };
        if (p === 'highest' && f32Dots === 'kernel') return { y: matmulF32Kernel(f, x, f.reshape(w, [1, hidden, intermediate]), f.scalar(0, 's32')) };
        return { y: f.matmul(x, w) };
      },
      DOT_OPTIONS[p],
    ),
  );
  const owned: { dispose(): void }[] = [];
  try {
    const [f32, bf16] = await Promise.all(programs.map((p) => client.compile(p.text)));
    owned.push(f32, bf16);
    const fill = (n: number): Float32Array => Float32Array.from({ length: n }, (_, i) => ((i * 7919) % 1000) / 1000 - 0.5);
    const x = await client.upload(fill(DOT_SPEED_ROWS * hidden), [DOT_SPEED_ROWS, hidden]);
    const w = await client.upload(fill(hidden * intermediate), [hidden, intermediate]);
    owned.push(x, w);
    for (let i = 0; i < 2; i++) {
      await seconds(f32, [x, w]);
      await seconds(bf16, [x, w]);
    }
    const times: { f32: number[]; bf16: number[] } = { f32: [], bf16: [] };
    for (let r = 0; r < ROUNDS; r++) {
      times.f32.push(await seconds(f32, [x, w]));
      times.bf16.push(await seconds(bf16, [x, w]));
    }
    const flop = 2 * DOT_SPEED_ROWS * hidden * intermediate;
    const speeds: DotSpeeds = {
      shape,
      f32Gflops: flop / Math.min(...times.f32) / 1e9,
      bf16Gflops: flop / Math.min(...times.bf16) / 1e9,
      rounds: ROUNDS,
      bf16Dots,
      f32Dots,
      source: 'measured',
      cores: os.availableParallelism(),
    };
    writeCachedJson(file, FILE_VERSION, speeds);
    return speeds;
  } finally {
    for (const o of owned.reverse()) o.dispose();
  }
}

/**
 * The speeds 'auto' decides by, on a CPU plugin whose kernels' tried instruction set has bf16 dot
 * units (precision-choice.ts, BF16_DOT_ISAS); null elsewhere, or where they could not be measured
 * (the reason then says so).
 */
export async function dotSpeedsForAuto(client: Client, kernel: KernelPaths | null, hidden: number, intermediate: number, dots: DotsTimed = XLA_DOTS): Promise<DotSpeeds | null> {
  if (client.platformName.toLowerCase() !== 'cpu' || kernel === null || !BF16_DOT_ISAS.includes(kernel.tried)) return null;
  try {
    return await dotSpeeds(client, hidden, intermediate, dots);
  } catch {
    return null;
  }
}
