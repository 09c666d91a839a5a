'use strict';
// pjrt-score/ai-sdk with AI SDK 6 and AI SDK 7, as a user installs them
// (docs/rerank.md, "Framework adapters"): `npm pack` the project; a fresh
// project installs the tarball with `ai@6`, another with `ai@7` (npm
// resolves the peers without ERESOLVE; on Node 20 a bare `ai` resolves to 6),
// and there `rerank()` from the installed `ai` ranks as Scorer.rerank does:
// PjrtScoreRerankingModelV3 (specification v3) with both, PjrtScoreRerankingModel
// (v4) with 7, while 6 refuses v4 by name. The model is a tiny random Qwen3
// with Qwen's vocabulary, named like a reranker; the native addon is the
// tarball's prebuild, the CPU plugin the shared cache's.
const test = require('tape');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { tinyQwenVocabDir } = require('./helpers/tiny-qwen-vocab');

const root = path.join(__dirname, '..');
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-ai-sdk-'));
let tarball;
let modelDir;

/** Child npm/node runs must not inherit the outer `npm test`'s lifecycle settings. */
function childEnv() {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if ((/^npm_/i.test(k) && !/^npm_config_(cache|registry|userconfig)$/i.test(k)) || k === 'INIT_CWD') continue;
    env[k] = v;
  }
  return { ...env, PJRT_PLUGIN_PATH: '', PJRT_SCORE_MODEL: '' };
}

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', env: childEnv(), maxBuffer: 64 << 20 });
  r.describe = () =>
    `${cmd} ${args.join(' ')} exited ${r.status}\n${(r.stdout || '').slice(-2000)}\n${(r.stderr || '').slice(-2000)}`;
  return r;
}

const CONSUMER = `'use strict';
const { Scorer } = require('pjrt-score');
const { PjrtScoreRerankingModel, PjrtScoreRerankingModelV3 } = require('pjrt-score/ai-sdk');
const QUERY = 'how do solar panels work?';
const DOCUMENTS = ['Solar panels turn sunlight into electricity.', 'Two cups of flour.', 'Photovoltaic cells.', 'A poem about rain.'];
(async () => {
  const { rerank } = await import('ai');
  const scorer = await Scorer.load({ model: process.argv[2], diskCache: false, prefixCacheBytes: 0 });
  const direct = await scorer.rerank({ query: QUERY, documents: DOCUMENTS, topN: 3 });
  const out = { direct: direct.results.map((r) => [r.index, r.relevanceScore]) };
  for (const [name, Model] of [['v3', PjrtScoreRerankingModelV3], ['v4', PjrtScoreRerankingModel]]) {
    try {
      const r = await rerank({ model: Model.fromScorer(scorer), query: QUERY, documents: DOCUMENTS, topN: 3 });
      out[name] = r.ranking.map((x) => [x.originalIndex, x.score]);
    } catch (err) {
      out[name] = { error: err.name + ': ' + err.message };
    }
  }
  scorer.dispose();
  console.log(JSON.stringify(out));
})().catch((err) => { console.error(err); process.exit(1); });
`;

test('setup: the prebuilt addon, npm pack, a tiny Qwen3-Reranker', (t) => {
  const prebuild = run('npm', ['run', 'build:prebuilds'], root);
  check(t, prebuild.status, 0, 'npm run build:prebuilds', prebuild);
  const pack = run('npm', ['pack', '--ignore-scripts', '--pack-destination', work], root);
  check(t, pack.status, 0, 'npm pack', pack);
  tarball = path.join(work, pack.stdout.trim().split('\n').pop());
  t.ok(fs.existsSync(tarball), `tarball ${path.basename(tarball)}`);
  modelDir = tinyQwenVocabDir('qwen3', 21, path.join(work, 'tiny-Qwen3-Reranker'));
  t.end();
});

/** t.equal, with the command's output when it fails. */
function check(t, actual, expected, message, result) {
  t.equal(actual, expected, message);
  if (actual !== expected) t.comment(result.describe());
}

function installedVersion(project, name) {
  return JSON.parse(fs.readFileSync(path.join(project, 'node_modules', name, 'package.json'), 'utf8')).version;
}

for (const [spec, major, v4Works] of [
  ['ai@6', 6, false],
  ['ai@7', 7, true],
]) {
  test(`a fresh project: npm i <tarball> ${spec} resolves, and rerank() from ai ${major} works`, (t) => {
    const project = path.join(work, `consumer-${major}`);
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: `consumer-${major}`, private: true }));
    const install = run('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', tarball, spec], project);
    check(t, install.status, 0, `npm install exits 0 (no ERESOLVE)`, install);
    t.notOk(/ERESOLVE/.test(install.stderr), 'no ERESOLVE warning either');
    const ai = installedVersion(project, 'ai');
    const provider = installedVersion(project, '@ai-sdk/provider');
    t.equal(Number(ai.split('.')[0]), major, `ai ${ai}`);
    t.equal(Number(provider.split('.')[0]), major - 3, `@ai-sdk/provider ${provider}`);
    fs.writeFileSync(path.join(project, 'consumer.js'), CONSUMER);
    const r = run(process.execPath, ['consumer.js', modelDir], project);
    check(t, r.status, 0, 'the consumer ran', r);
    const out = JSON.parse(r.stdout.trim().split('\n').pop());
    t.equal(out.direct.length, 3, 'Scorer.rerank: top 3');
    t.deepEqual(
      out.v3,
      out.direct,
      `PjrtScoreRerankingModelV3 with ai ${major}: the same indices and scores as Scorer.rerank`,
    );
    if (v4Works) t.deepEqual(out.v4, out.direct, `PjrtScoreRerankingModel (v4) with ai ${major}: the same`);
    else t.match(out.v4.error || '', /version|v4/i, `ai ${major} refuses the v4 model: ${out.v4.error}`);
    t.end();
  });
}

test('Node 20 and a bare `ai`: npm resolves a version our peer range takes', (t) => {
  const project = path.join(work, 'consumer-bare');
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer-bare', private: true }));
  const r = run('npm', ['install', '--dry-run', '--ignore-scripts', '--no-audit', '--no-fund', tarball, 'ai'], project);
  check(t, r.status, 0, `npm install --dry-run <tarball> ai exits 0 on Node ${process.versions.node}`, r);
  const added = /add ai (\d+)\./.exec(r.stdout);
  t.ok(added && ['6', '7'].includes(added[1]), `resolved ai ${added && added[1]}.x`);
  t.end();
});

test('teardown', (t) => {
  fs.rmSync(work, { recursive: true, force: true });
  t.end();
});
