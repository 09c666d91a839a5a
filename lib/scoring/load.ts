/**
 * Scorer.load's sequence: the options checked, the model opened while the
 * plugin loads, the precision and the weight type decided, the weights
 * streamed to the device; what a failed load acquired is released, last
 * first.
 */
import { chooseWeightType, WeightTypeChoice } from '../device-weights/choose';
import { DeviceWeights, uploadWeights } from '../device-weights/upload';
import type { ModelConfig } from '../model/config';
import type { StoredMatrixType } from '../model/load';
import { kernelMatrices } from '../hlo';
import { ensureModelPath } from '../model/default-model';
import { openModel } from '../model/load';
import type { Tokenizer } from '../model/tokenizer';
import { Client } from '../runtime/client';
import { attentionKernelPaths, KernelPaths } from '../runtime/kernel-paths';
import type { XlaOptions } from '../runtime/xla-options';
import { loadProgramCache } from './execution/load-programs';
import { PlatformFactsOverride, platformFactsOverride, withOverride } from './platform/override';
import { platformFacts } from './platform/profiles';
import { bf16DotsByKernel, choosePrecision } from './platform/precision-choice';
import { bindAttentionForms, checkScorerOptions, LoadSettings, loadFacts } from './setup';
import type { Scorer } from './scorer';
import type { ScorerOptions } from './scorer-types';

/** What a load hands the Scorer it builds. */
export interface LoadedParts {
  readonly modelName: string;
  readonly modelPath: string;
  /** The model file's stored tensor types. */
  readonly quantization: string;
  readonly config: ModelConfig;
  /** The model's tokenizer, built at its first call (and logged). */
  readonly tokenizer: () => Tokenizer;
  readonly client: Client;
  readonly weights: DeviceWeights;
  readonly weightChoice: WeightTypeChoice;
  /** The options, their attention forms bound to the loaded plugin. */
  readonly options: ScorerOptions;
  readonly settings: LoadSettings;
  /** PJRT_SCORE_PLATFORM_FACTS, read at load (platform/override.ts). */
  readonly factsOverride: PlatformFactsOverride;
  readonly xlaOptions: XlaOptions;
  /** The attention kernels' paths where the plugin registered them, else null. */
  readonly kernelPaths: KernelPaths | null;
  /** How the checkpoint stores its matrices (what precision 'auto' follows). */
  readonly matrixType: StoredMatrixType;
  /** performance.now() at the start of the load and once the model file was open. */
  readonly startedMs: number;
  readonly openedMs: number;
}

/** Loads the parts and builds the Scorer from them with `build`; a failure in either releases what the load acquired. */
export async function loadScorer(options: ScorerOptions, build: (parts: LoadedParts) => Scorer): Promise<Scorer> {
  const settings = checkScorerOptions(options);
  // The measurement knob is read before anything loads: a bad one loads nothing.
  const factsOverride = platformFactsOverride();
  const startedMs = performance.now();
  const modelPath = await ensureModelPath(options.model); // first use fetches the default model (Client.create fetches the plugin)
  // What a failed load releases, last acquired first. The model file is closed in every case.
  const release: (() => void)[] = [];
  // The client comes up (the plugin loads, on a worker) while this thread reads the model's header.
  const clientReady = Client.create({ plugin: options.plugin, options: options.clientOptions });
  release.push(() =>
    void clientReady.then(
      (c) => c.dispose(), // disposes its children too: the weights, the executables
      () => undefined,
    ),
  );
  try {
    const model = openModel(modelPath);
    let closed = false;
    const closeModel = (): void => {
      if (!closed) model.weights.close();
      closed = true;
    };
    try {
      const openedMs = performance.now();
      const client = await clientReady;
      const bound = bindAttentionForms(options, client);
      const { facts, xlaOptions } = loadFacts(client.platformName, factsOverride, options.xlaOptions);
      const kernelPaths = client.prefixAttentionKernel ? attentionKernelPaths(model.config.headDim) : null;
      const classFacts = withOverride(platformFacts(client.platformName, kernelPaths?.tried ?? null), factsOverride);
      const precision = choosePrecision(settings.precision, client.platformName, kernelPaths, model.matrixType).precision;
      const byKernel = precision === 'bf16' && bf16DotsByKernel(classFacts, kernelPaths);
      // bf16 dots that read bf16 weights as they lie: the bf16 matmul kernel's on the CPU, every GPU's.
      const bf16Dots = precision === 'bf16' && (byKernel || client.platformName !== 'cpu');
      const weightChoice = chooseWeightType(settings.weights, { platform: client.platformName, config: model.config, matrixType: model.matrixType, bf16Dots });
      // Under the matmul kernel the matrices it reads are stored packed for it (the setup's rule, setup.ts bf16.matmulKernel).
      const packed = byKernel
        ? kernelMatrices(model.config, { dotOperands: 'bf16', matmulKernel: true, bf16Products: classFacts.bf16Products, weights: weightChoice.weightType })
        : [];
      // Streams: each tensor is read, converted and uploaded before the next is read.
      const loadPrograms = loadProgramCache(client, options.diskCache ?? true, xlaOptions);
      const weights = await uploadWeights(client, model.config, model.weights, weightChoice.weightType, {
        programs: loadPrograms.programs,
        bf16Matrices: facts.bf16Matrices,
        packed,
      }).finally(() => {
        closeModel();
        return loadPrograms.close();
      });
      return build({
        modelName: model.name,
        modelPath: model.path,
        quantization: model.quantization,
        config: model.config,
        tokenizer: tokenizerOnce(() => model.tokenizer, model.name, options.log),
        client,
        weights,
        weightChoice,
        options: bound,
        settings,
        factsOverride,
        xlaOptions,
        kernelPaths,
        matrixType: model.matrixType,
        startedMs,
        openedMs,
      });
    } finally {
      closeModel();
    }
  } catch (err) {
    for (const undo of release.reverse()) undo();
    throw err;
  }
}

/**
 * The model's tokenizer, built on first use and then kept. A GGUF file's is built from its metadata on
 * first use (the first text request, a rerank template, or warmup()), not at load: on a 2-core CPU
 * building it took ~0.25 s that the weight decode needed, and requests given token ids never use it.
 */
function tokenizerOnce(build: () => Tokenizer, model: string, log: ScorerOptions['log']): () => Tokenizer {
  let built: Tokenizer | undefined;
  return () => {
    if (built) return built;
    const start = performance.now();
    built = build();
    log?.({ event: 'tokenizer_built', model, seconds: (performance.now() - start) / 1000 });
    return built;
  };
}
