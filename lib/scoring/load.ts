/**
 * Scorer.load's sequence: the options checked, the model opened while the
 * plugin loads, the precision and the weight type decided, the weights
 * streamed to the device; what a failed load acquired is released, last
 * first.
 */
import { uploadWeights } from '../device-weights/upload';
import { ensureModelPath } from '../model/default-model';
import { openModel } from '../model/load';
import type { Tokenizer } from '../model/tokenizer';
import { Client } from '../runtime/client';
import { attentionKernelPaths } from '../runtime/kernel-paths';
import { hostCpu } from '../runtime/host-cpu';
import { loadProgramCache } from './execution/load-programs';
import { platformFactsOverride } from './platform/override';
import { bindAttentionForms, checkScorerOptions, LoadedParts, scorerSetup } from './setup';
import type { ScorerOptions } from './scorer-types';

/**
 * Loads the parts and builds the Scorer from them with `build`; a failure in either releases what the load acquired.
 */
export async function loadScorer<T>(options: ScorerOptions, build: (parts: LoadedParts) => T): Promise<T> {
  const settings = checkScorerOptions(options);
  // The measurement knob is read before anything loads: a bad one loads nothing.
  const factsOverride = platformFactsOverride();
  const startedMs = performance.now();
  // The first use fetches the default model (Client.create fetches the plugin).
  const modelPath = await ensureModelPath(options.model);
  // What a failed load releases, last acquired first. The model file is closed in every case.
  const release: (() => void)[] = [];
  // The client comes up (the plugin loads, on a worker) while this thread reads the model's header.
  const clientReady = Client.create({ plugin: options.plugin, options: options.clientOptions });
  release.push(
    () =>
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
      const kernelPaths = client.prefixAttentionKernel ? attentionKernelPaths(model.config.headDim) : null;
      // Every decision of the load, made once (setup.ts): the Scorer takes it as it is.
      const setup = scorerSetup({
        config: model.config,
        options: bound,
        precision: settings.precision,
        weights: settings.weights,
        plugin: client,
        kernelPaths,
        factsOverride,
        matrixType: model.matrixType,
        cpuVendor: client.platformName === 'cpu' ? (hostCpu().vendor ?? null) : null,
      });
      // Streams: each tensor is read, converted and uploaded before the next is read.
      const loadPrograms = loadProgramCache(client, options.diskCache ?? true, setup.xlaOptions);
      const weights = await uploadWeights(client, model.config, model.weights, setup.weightChoice.weightType, {
        programs: loadPrograms.programs,
        bf16Matrices: setup.facts.bf16Matrices,
        packed: setup.packed.matrices,
        packedFor: setup.packed.for,
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
        setup,
        options: bound,
        settings,
        kernelPaths,
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
