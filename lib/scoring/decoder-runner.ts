/**
 * Runs decoder programs on the device: compiles through the JIT cache, uploads
 * the per-request inputs, appends the resident weights, executes, and frees
 * the inputs. Plans (plans.ts) decide what to run; this file only runs it.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { HloProgram } from '../hlo/program';
import { decoderDense, decoderExtend, decoderFused, decoderPrefill, DecoderDims } from '../hlo/transformer';
import { ModelConfig } from '../model/config';
import { DeviceWeights } from '../device-weights/upload';
import { Client } from '../runtime/client';
import { DeviceBuffer } from '../runtime/device-buffer';
import { DType } from '../runtime/dtype';
import { Executable } from '../runtime/executable';
import { JitKey, ProgramCompiler } from './compiler';
import { JitCache, JitCacheOptions } from './jit-cache';

export type DecoderProgramName = 'decoder_dense' | 'decoder_fused' | 'decoder_prefill' | 'decoder_extend';

/** A program and its bucket dims: what the JIT cache is keyed by. */
export interface ProgramRef {
  readonly program: DecoderProgramName;
  readonly dims: Readonly<Record<string, number>>;
}

/** A host array to upload as one program input. */
export interface HostInput {
  readonly data: Int32Array | Float32Array;
  readonly dims: readonly number[];
  readonly dtype: DType;
}

export type ProgramArg = HostInput | DeviceBuffer;

export function s32(data: Int32Array | readonly number[], dims?: readonly number[]): HostInput {
  const array = data instanceof Int32Array ? data : Int32Array.from(data);
  return { data: array, dims: dims ?? [array.length], dtype: 's32' };
}

export function s32Scalar(value: number): HostInput {
  return { data: Int32Array.of(value), dims: [], dtype: 's32' };
}

function buildProgram(config: DecoderDims, ref: ProgramRef): HloProgram {
  const d = ref.dims;
  switch (ref.program) {
    case 'decoder_dense':
      return decoderDense(config, { tokens: d.T, reads: d.K, labels: d.B });
    case 'decoder_fused':
      return decoderFused(config, { prefix: d.P, items: d.N, itemLength: d.L, labels: d.B });
    case 'decoder_prefill':
      return decoderPrefill(config, { prefix: d.P, labels: d.B });
    case 'decoder_extend':
      return decoderExtend(config, { prefix: d.P, items: d.N, itemLength: d.L, labels: d.B });
  }
}

/** Identifies the plugin build, so a disk cache never feeds one plugin another's executables. */
function pluginFingerprint(pluginPath: string): string {
  try {
    const st = fs.statSync(pluginPath);
    return createHash('sha256').update(`${pluginPath}:${st.size}:${st.mtimeMs}`).digest('hex').slice(0, 12);
  } catch {
    return 'unknown';
  }
}

export class DecoderRunner {
  readonly jit: JitCache<Executable>;
  private readonly modelId: string;

  constructor(
    readonly client: Client,
    readonly config: ModelConfig,
    private readonly weights: DeviceWeights,
    modelId: string,
    jitOptions: JitCacheOptions<Executable> = {},
  ) {
    this.modelId = modelId;
    const compiler: ProgramCompiler<Executable> = {
      cacheNamespace: `${client.platformName}-${client.platformVersion}-${pluginFingerprint(client.pluginPath)}`,
      compile: (text) => client.compile(text),
      serialize: (executable) => executable.serialize(),
      deserialize: (bytes) => client.deserialize(bytes),
      dispose: (executable) => executable.dispose(),
    };
    this.jit = new JitCache(compiler, { maxEntries: 48, ...jitOptions });
  }

  key(ref: ProgramRef): JitKey {
    return { program: ref.program, model: this.modelId, dims: ref.dims };
  }

  /** The program text for a ref (for warmup and the debug dump). */
  source(ref: ProgramRef): () => string {
    return () => buildProgram(this.config, ref).text;
  }

  /** Compiles (or finds) the program without running it. */
  async prepare(ref: ProgramRef): Promise<void> {
    await this.jit.get(this.key(ref), this.source(ref));
  }

  /**
   * Executes `ref` with `args` followed by the model weights. Host inputs are
   * uploaded and freed here; returned buffers belong to the caller.
   */
  async run(ref: ProgramRef, args: readonly ProgramArg[]): Promise<DeviceBuffer[]> {
    return this.jit.use(this.key(ref), this.source(ref), async (executable) => {
      const uploaded: DeviceBuffer[] = [];
      try {
        const buffers: DeviceBuffer[] = [];
        for (const arg of args) {
          if (arg instanceof DeviceBuffer) {
            buffers.push(arg);
          } else {
            const buffer = await this.client.upload(arg.data, arg.dims, arg.dtype);
            uploaded.push(buffer);
            buffers.push(buffer);
          }
        }
        return await executable.execute([...buffers, ...this.weights.buffers]);
      } finally {
        uploaded.forEach((b) => b.dispose());
      }
    });
  }

  dispose(): void {
    this.jit.dispose();
  }
}
