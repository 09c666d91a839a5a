'use strict';
// The published artifact, the way a user meets it: `npm run build:prebuilds` makes
// the prebuilt addon (or finds it current: built from the inputs as they are,
// by an earlier run, CI's prebuild step or prebuild.test.js), `npm pack` the tarball; it holds what an install needs
// and nothing else; a fresh project installs it with install scripts off (as
// npm's allowScripts policy leaves a dependency) and an EMPTY cache directory; there
// a CommonJS file runs StableHLO programs and scores with the default model on
// the prebuilt addon, fetching the plugin and the model on first use; an ES
// module then finds both cached and prints no fetch; with PJRT_SCORE_OFFLINE=1
// and an empty cache the error names the fetch command; TypeScript (strict)
// compiles against the shipped declarations.
//
// PJRT_SCORE_KEEP_TMP=1 keeps the temporary project for a look afterwards.
const test = require('tape');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
const prebuildScript = require('../scripts/build/prebuild.js');
const fixtures = path.join(__dirname, 'fixtures', 'consumer');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const platformDir = `${process.platform}-${process.arch}`;
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');

// What an installed copy may contain, by path inside the tarball. Native
// sources and the two build files are the from-source fallback that the
// "install" script (node-gyp-build, then cmake-js) uses where no prebuild fits.
const ALLOWED = [
  /^package\.json$/,
  /^README\.md$/,
  /^LICENSE(\.md|\.txt)?$/,
  /^dist\/.+\.(js|mjs|d\.ts)$/,
  /^bin\/[^/]+\.js$/,
  /^scripts\/build\/(install-native|postinstall|fetch-plugin|fetch-model)\.js$/,
  /^prebuilds\/[^/]+\/[^/]+\.node$/,
  /^native\/(binding|runtime|kernels)\/[^/]+\.(h|cc)$/,
  /^binding\.gyp$/,
  /^CMakeLists\.txt$/,
];

// Named so a failure says what leaked in.
const FORBIDDEN = [
  [/^test\//, 'tests'],
  [/^build\//, 'a native build folder'],
  [/^lib\/.*\.ts$/, 'TypeScript sources'],
  [/\.map$/, 'source maps (their sources are not shipped)'],
  [/^node_modules\//, 'node_modules'],
  [/(^|\/)\.cache\//, 'a cache folder'],
  [/\.tgz$/, 'a tarball'],
  [/^(bench-results|docs|seeds|examples|\.ci|\.git)\//, 'a repository-only folder'],
  [
    /^scripts\/(bench|lab|lib|build\/(prebuild|write-esm-entry|bundle|pack-modules|docs-options|docs-performance))/,
    'a development script',
  ],
  [/^tsconfig.*\.json$/, 'the TypeScript config'],
];

const state = { work: null, tarball: null, entries: [], project: null, installed: null, cache: null, reports: {} };

/** What the consumer's processes see: a cache that starts empty, the default plugin and model. */
function consumerEnv(extra = {}) {
  return childEnv({
    PJRT_SCORE_CACHE: state.cache,
    PJRT_PLUGIN_PATH: '',
    PJRT_SCORE_MODEL: '',
    PJRT_SCORE_OFFLINE: '',
    ...extra,
  });
}

/** Environment for child npm/node runs: the outer `npm test` must not leak its lifecycle settings. */
function childEnv(extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (/^npm_/i.test(k) && !/^npm_config_(cache|registry|userconfig)$/i.test(k)) continue;
    if (k === 'INIT_CWD') continue;
    env[k] = v;
  }
  return { ...env, ...extra };
}

function run(cmd, args, options) {
  const started = Date.now();
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 << 20, env: childEnv(), ...options });
  r.seconds = (Date.now() - started) / 1000;
  r.describe = () =>
    `${cmd} ${args.join(' ')} exited ${r.status}${r.signal ? ` (signal ${r.signal})` : ''}${r.error ? ` (${r.error.message})` : ''}\n` +
    `--- stdout (tail)\n${(r.stdout || '').slice(-3000)}\n--- stderr (tail)\n${(r.stderr || '').slice(-3000)}`;
  return r;
}

/** t.ok that also returns the condition (tape's assertions return nothing), to stop a test early. */
function ok(t, condition, message) {
  t.ok(condition, message);
  return Boolean(condition);
}

function npm(args, options) {
  return run('npm', args, options);
}

function lastJsonLine(text) {
  const line = (text || '')
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .pop();
  return line ? JSON.parse(line) : null;
}

function walk(dir, base = dir) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = path.join(dir, d.name);
    return d.isDirectory() ? walk(p, base) : [path.relative(base, p).split(path.sep).join('/')];
  });
}

function maxAbsDiff(a, b) {
  let m = 0;
  a.forEach((row, i) => row.forEach((x, j) => (m = Math.max(m, Math.abs(x - b[i][j])))));
  return m;
}

// npm runs `pre<name>` and `post<name>` around `npm run <name>` by their names
// alone. Only npm's own lifecycle hooks may be named so; a script that runs
// because of its name (a `prebuild` before every `npm run build`) is a bug.
const LIFECYCLE_HOOKS = new Set([
  'preinstall',
  'install',
  'postinstall',
  'prepack',
  'postpack',
  'prepare',
  'prepublishOnly',
  'preversion',
  'version',
  'postversion',
]);

test('no npm script runs by accident: none is a pre/post hook of another script', (t) => {
  const names = Object.keys(pkg.scripts);
  const hooks = names.filter(
    (n) => /^(pre|post)/.test(n) && !LIFECYCLE_HOOKS.has(n) && names.includes(n.replace(/^(pre|post)/, '')),
  );
  t.deepEqual(hooks, [], `no script runs before or after another by its name (${names.length} scripts)`);
  t.notOk(
    /prebuild\.js|zig|fetch/.test(pkg.scripts.build + (pkg.scripts[pkg.scripts.build.replace(/^npm run /, '')] || '')),
    'npm run build compiles TypeScript only (it fetches nothing)',
  );
  t.end();
});

test('npm run build:prebuilds: the prebuilt addon for this platform, built from the sources as they are', (t) => {
  const r = npm(['run', 'build:prebuilds'], { cwd: root, timeout: 1200000 });
  const built = /prebuild ready/.test(r.stderr || '');
  t.equal(
    r.status,
    0,
    r.status === 0
      ? `npm run build:prebuilds (${r.seconds.toFixed(0)} s; ${built ? 'built' : 'already current'})`
      : r.describe(),
  );
  t.ok(
    prebuildScript.prebuildIsCurrent(root),
    'the prebuild matches the current native sources and build files (scripts/build/prebuild.js stamp)',
  );
  const dir = path.join(root, 'prebuilds', platformDir);
  t.ok(
    fs.existsSync(dir) && fs.readdirSync(dir).some((f) => f.endsWith('.node')),
    `prebuilds/${platformDir}/*.node exists`,
  );
  t.ok(fs.existsSync(path.join(root, 'dist', 'index.js')), 'dist/index.js exists (npm run build makes it)');
  t.end();
});

test('npm pack: the tarball holds what an install needs and nothing else', (t) => {
  state.work = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-package-'));
  const r = npm(['pack', '--json', '--pack-destination', state.work], { cwd: root, timeout: 300000 });
  if (!ok(t, r.status === 0, r.status === 0 ? `npm pack (${r.seconds.toFixed(1)} s)` : r.describe())) return t.end();
  // A prepack script's output may come first; npm's JSON report starts at a line "[".
  const at = r.stdout.search(/^\[\s*$/m);
  if (!ok(t, at >= 0, 'npm pack printed its JSON report')) return t.end();
  const [info] = JSON.parse(r.stdout.slice(at));
  state.tarball = path.join(state.work, info.filename);
  t.ok(fs.existsSync(state.tarball), `tarball ${info.filename}`);

  // The tarball itself, not npm's report of it.
  const listed = run('tar', ['-tzf', state.tarball], { timeout: 60000 });
  t.equal(listed.status, 0, 'tar lists the tarball');
  const entries = listed.stdout
    .split('\n')
    .filter((l) => l && !l.endsWith('/'))
    .map((l) => l.replace(/^package\//, ''));
  state.entries = entries;
  const bytes = fs.statSync(state.tarball).size;
  t.comment(
    `${info.filename}: ${(bytes / 1024).toFixed(0)} KiB packed, ${(info.unpackedSize / 1024).toFixed(0)} KiB unpacked, ${entries.length} files`,
  );
  const groups = {};
  for (const e of entries) {
    const key = e.includes('/') ? `${e.split('/')[0]}/` : e;
    groups[key] = (groups[key] || 0) + 1;
  }
  t.comment(
    `contents: ${Object.entries(groups)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')}`,
  );

  const has = (p) => entries.includes(p);
  for (const p of [
    'package.json',
    'README.md',
    'dist/index.js',
    'dist/index.mjs',
    'dist/index.d.ts',
    'bin/pjrt-score.js',
  ]) {
    t.ok(has(p), `has ${p}`);
  }
  for (const { platform } of prebuildScript.TARGETS) {
    const nodes = entries.filter((e) => new RegExp(`^prebuilds/${platform}/[^/]+\\.node$`).test(e));
    t.ok(
      nodes.length > 0,
      `has prebuilds/${platform}/*.node (${nodes.join(', ') || 'none: run npm run build:prebuilds before npm pack'})`,
    );
  }

  // Everything package.json points at is shipped.
  const pointed = [pkg.main, pkg.types, ...Object.values(pkg.bin || {})];
  const walkExports = (v) =>
    typeof v === 'string' ? [v] : v && typeof v === 'object' ? Object.values(v).flatMap(walkExports) : [];
  pointed.push(...walkExports(pkg.exports));
  for (const p of new Set(pointed.map((p) => p.replace(/^\.\//, ''))))
    t.ok(has(p), `package.json points at ${p}: shipped`);
  for (const hook of ['preinstall', 'install', 'postinstall']) {
    for (const m of String(pkg.scripts?.[hook] || '').matchAll(/(?:^|\s)((?:scripts|bin)\/[\w./-]+\.js)/g)) {
      t.ok(has(m[1]), `the ${hook} script's ${m[1]}: shipped`);
    }
  }

  // Shipped scripts only require shipped files.
  const dir = fs.mkdtempSync(path.join(state.work, 'unpacked-'));
  run('tar', ['-xzf', state.tarball, '-C', dir], { timeout: 60000 });
  const unpacked = path.join(dir, 'package');
  for (const e of entries.filter((e) => /^(bin|scripts)\/.*\.js$/.test(e))) {
    const text = fs.readFileSync(path.join(unpacked, e), 'utf8');
    for (const m of text.matchAll(/require\((['"])(\.{1,2}\/[^'"]+)\1\)/g)) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(e), m[2]));
      const candidates = [target, `${target}.js`, `${target}/index.js`];
      t.ok(candidates.some(has), `${e} requires ${m[2]}: shipped`);
    }
  }

  const strays = entries.filter((e) => !ALLOWED.some((re) => re.test(e)));
  t.deepEqual(
    strays,
    [],
    'every file matches the allow-list (compiled JS, declarations, bin, install scripts, prebuilds, native sources for the fallback build)',
  );
  for (const [re, what] of FORBIDDEN) {
    const hits = entries.filter((e) => re.test(e));
    t.deepEqual(hits, [], `excluded: ${what}`);
  }

  // dist/ is built from lib/ as it is now: no leftovers of deleted sources, every module typed.
  const js = entries.filter((e) => /^dist\/.+\.js$/.test(e));
  if (fs.existsSync(path.join(root, 'lib'))) {
    const orphans = js.filter(
      (e) => !fs.existsSync(path.join(root, 'lib', e.slice('dist/'.length).replace(/\.js$/, '.ts'))),
    );
    t.deepEqual(
      orphans,
      [],
      'every dist/**/*.js comes from a lib/**/*.ts (no stale files: rebuild dist/ from scratch)',
    );
  }
  const untyped = js.filter((e) => !has(e.replace(/\.js$/, '.d.ts')));
  t.deepEqual(untyped, [], 'every dist/**/*.js has its .d.ts');
  t.ok(bytes < 5 * 1024 * 1024, `tarball under 5 MiB (${(bytes / 1024 / 1024).toFixed(2)} MiB)`);
  t.end();
});

// Scripts off, as npm's allowScripts policy leaves a dependency nobody has
// approved. npm 11.19.1 itself still runs such scripts with a warning (it only
// refuses with --strict-allow-scripts), so --ignore-scripts makes the case the
// same on every npm version.
test('npm install --ignore-scripts <tarball> into a fresh project: no install script runs', (t) => {
  if (!state.tarball) return t.fail('no tarball (see the npm pack test)') || t.end();
  state.project = path.join(state.work, 'consumer');
  state.cache = fs.mkdtempSync(path.join(state.work, 'empty-cache-'));
  fs.mkdirSync(state.project);
  fs.writeFileSync(
    path.join(state.project, 'package.json'),
    `${JSON.stringify({ name: 'pjrt-score-consumer', version: '1.0.0', private: true, description: 'made by test/package.test.js' }, null, 2)}\n`,
  );
  const r = npm(['install', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund', state.tarball], {
    cwd: state.project,
    timeout: 300000,
    env: consumerEnv(),
  });
  if (!ok(t, r.status === 0, r.status === 0 ? `installed (${r.seconds.toFixed(1)} s)` : r.describe())) return t.end();
  state.installed = path.join(state.project, 'node_modules', 'pjrt-score');
  t.ok(fs.existsSync(path.join(state.installed, 'package.json')), 'node_modules/pjrt-score is there');
  t.notOk(
    fs.existsSync(path.join(state.installed, 'build')),
    'no build/ in the installed package (nothing was compiled)',
  );
  t.deepEqual(fs.readdirSync(state.cache), [], 'the cache is still empty after install');
  const prebuilt = walk(path.join(state.installed, 'prebuilds')).filter((f) => f.endsWith('.node'));
  t.ok(
    prebuilt.some((f) => f.startsWith(`${platformDir}/`)),
    `the installed package has prebuilds/${platformDir}/*.node`,
  );
  t.ok(
    fs.existsSync(path.join(state.project, 'node_modules', '.bin', 'pjrt-score')),
    'node_modules/.bin/pjrt-score is linked',
  );
  for (const f of fs.readdirSync(fixtures)) fs.copyFileSync(path.join(fixtures, f), path.join(state.project, f));
  t.end();
});

test('PJRT_SCORE_OFFLINE=1 with an empty cache: Scorer.load() names the fetch command and downloads nothing', (t) => {
  if (!state.installed) return t.fail('not installed (see the install test)') || t.end();
  const cache = fs.mkdtempSync(path.join(state.work, 'offline-cache-'));
  const script = `require('pjrt-score').Scorer.load().then(() => console.log('loaded'), (e) => console.log(JSON.stringify({ name: e.name, message: e.message })));`;
  const r = run(process.execPath, ['-e', script], {
    cwd: state.project,
    timeout: 120000,
    env: consumerEnv({ PJRT_SCORE_CACHE: cache, PJRT_SCORE_OFFLINE: '1' }),
  });
  const err = lastJsonLine(r.stdout) || {};
  t.equal(err.name, 'ModelNotFoundError', `Scorer.load() rejects with ${err.name}`);
  t.ok(
    /npx pjrt-score fetch/.test(err.message || ''),
    `the message names the fetch command: ${JSON.stringify((err.message || '').split('\n')[1])}`,
  );
  t.deepEqual(walk(cache), [], 'nothing was written to the cache');
  t.end();
});

function checkConsumerReport(t, entry, r) {
  if (!ok(t, r.status === 0, r.status === 0 ? `${entry} consumer ran (${r.seconds.toFixed(1)} s)` : r.describe()))
    return null;
  const report = lastJsonLine(r.stdout);
  if (!ok(t, report, 'printed its JSON report')) return null;
  const prebuilds = path.join(state.installed, 'prebuilds', platformDir) + path.sep;
  t.equal(fs.realpathSync(report.packageDir), fs.realpathSync(state.installed), 'loaded the installed package');
  t.ok(String(report.addon).startsWith(prebuilds), `the addon is the prebuild: ${report.addon}`);
  t.equal(report.platform, 'cpu', 'PJRT client on the CPU plugin');
  t.deepEqual(report.handWritten.dims, [3, 2], 'hand-written dot_general: output dims');
  t.ok(
    report.handWritten.maxAbsDiff <= 1e-5,
    `hand-written dot_general vs JS: max |diff| ${report.handWritten.maxAbsDiff.toExponential(2)}`,
  );
  t.deepEqual(report.lmHead.dims, [3, 2], 'programs.lmHeadGather: output dims');
  t.ok(
    report.lmHead.maxAbsDiff <= 1e-4,
    `programs.lmHeadGather vs JS: max |diff| ${report.lmHead.maxAbsDiff.toExponential(2)}`,
  );
  const s = report.score;
  t.equal(s.model, 'SmolLM2-135M-Instruct', 'scored with the default model');
  t.equal(s.scores.length, 3, 'one row per item');
  t.ok(
    s.scores.every((row) => row.length === 2 && row.every((x) => Number.isFinite(x) && x > 0 && x <= 1)),
    'each row: 2 probabilities in (0, 1]',
  );
  const d = maxAbsDiff(s.scores, s.serialScores);
  t.ok(d <= 1e-4, `${s.algorithm} plan vs serial reference: max |diff| ${d.toExponential(2)}`);
  t.ok(s.usage.promptTokens > 0 && s.usage.totalTokens === s.usage.promptTokens, `usage ${JSON.stringify(s.usage)}`);
  t.ok(
    s.inputError && s.inputError.isScoreInputError,
    `empty labels throw the exported ScoreInputError (${s.inputError && s.inputError.message})`,
  );
  t.equal(s.inputError && s.inputError.code, 'INPUT_INVALID', "ScoreInputError.code 'INPUT_INVALID'");
  t.equal(s.inputError && s.inputError.status, 400, 'ScoreInputError.status 400');
  t.ok(s.inputError && s.inputError.isPjrtScoreError, 'a PjrtScoreError, the exported base');
  return report;
}

/** Lines of ours about fetching, on stderr. */
function fetchLines(stderr) {
  return (stderr || '')
    .split('\n')
    .filter((l) => /^\[pjrt-score\] .*(downloading|verifying|extracting|ready at|already in|waiting)/.test(l));
}

test('CommonJS, empty cache: require("pjrt-score"), first use fetches the plugin and the model, then scores on the prebuilt addon', (t) => {
  if (!state.installed) return t.fail('not installed (see the install test)') || t.end();
  const r = run(process.execPath, ['use-require.cjs'], { cwd: state.project, timeout: 900000, env: consumerEnv() });
  const lines = fetchLines(r.stderr);
  t.ok(
    lines.some((l) => /XLA CPU PJRT plugin \(linux-x64\): downloading/.test(l)),
    'fetched the CPU plugin on first use (progress on stderr)',
  );
  t.ok(
    lines.some((l) => /SmolLM2.*: downloading/.test(l)),
    'fetched the default model on first use',
  );
  const ready = lines.filter((l) => /ready at /.test(l));
  t.ok(
    ready.length === 2 && ready.every((l) => l.includes(state.cache)),
    `both into the empty PJRT_SCORE_CACHE (${state.cache})`,
  );
  state.reports.require = checkConsumerReport(t, 'require', r);
  t.end();
});

test('ES module, second process: everything is cached (no fetch), same scores, every export', (t) => {
  if (!state.installed) return t.fail('not installed (see the install test)') || t.end();
  const r = run(process.execPath, ['use-import.mjs'], { cwd: state.project, timeout: 300000, env: consumerEnv() });
  t.deepEqual(fetchLines(r.stderr), [], 'printed no fetch: plugin and model found in the cache');
  const report = checkConsumerReport(t, 'import', r);
  if (report) {
    const x = report.exports;
    t.deepEqual(
      x.missingFromEsm,
      [],
      `dist/index.mjs names every CommonJS export (${x.esm} of ${x.cjs}; rebuild with npm run build)`,
    );
    t.deepEqual(x.extraInEsm, [], 'and nothing more');
    t.deepEqual(x.notIdentical, [], 'each named export is the CommonJS object itself');
    t.ok(x.defaultIsCjs, 'the default export is the CommonJS module');
    if (state.reports.require) {
      t.deepEqual(report.score.scores, state.reports.require.score.scores, 'require and import score identically');
    }
  }
  t.end();
});

test('npx pjrt-score fetch after first use: both already in the cache, nothing downloaded', (t) => {
  if (!state.installed) return t.fail('not installed (see the install test)') || t.end();
  const r = run('npx', ['--no-install', 'pjrt-score', 'fetch'], {
    cwd: state.project,
    timeout: 900000,
    env: consumerEnv(),
  });
  if (!ok(t, r.status === 0, r.status === 0 ? `npx pjrt-score fetch (${r.seconds.toFixed(1)} s)` : r.describe()))
    return t.end();
  const plugin = /^plugin: (.+)$/m.exec(r.stdout)?.[1];
  const model = /^model: (.+)$/m.exec(r.stdout)?.[1];
  t.ok(plugin && plugin.startsWith(state.cache) && fs.existsSync(plugin), `plugin in the cache: ${plugin}`);
  t.ok(model && model.startsWith(state.cache) && fs.existsSync(model), `model in the cache: ${model}`);
  const noops = (r.stderr.match(/already in /g) || []).length;
  t.equal(noops, 2, `downloads nothing (${noops} of 2 "already in" lines)`);
  t.doesNotMatch(r.stderr, /downloading/, 'no download line');
  t.end();
});

test('TypeScript (strict, nodenext) compiles against the shipped declarations', (t) => {
  if (!state.installed) return t.fail('not installed (see the install test)') || t.end();
  if (!ok(t, fs.existsSync(tsc), `typescript in the repository: ${tsc}`)) return t.end();
  // A TypeScript service has @types/node; take the range this repository builds with.
  const typesNode = pkg.devDependencies?.['@types/node'] || '^20';
  const i = npm(
    [
      'install',
      '--save-dev',
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      '--ignore-scripts',
      `@types/node@${typesNode}`,
    ],
    {
      cwd: state.project,
      timeout: 300000,
    },
  );
  if (!ok(t, i.status === 0, i.status === 0 ? `@types/node@${typesNode} installed` : i.describe())) return t.end();
  const r = run(process.execPath, [tsc, '--noEmit', '-p', 'tsconfig.json', '--listFilesOnly'], {
    cwd: state.project,
    timeout: 300000,
  });
  const shipped = (r.stdout || '').split('\n').filter((f) => f.includes('node_modules/pjrt-score/dist/'));
  t.ok(
    shipped.some((f) => f.endsWith('dist/index.d.ts')),
    `resolves pjrt-score to its shipped dist/index.d.ts (${shipped.length} declaration files)`,
  );
  const c = run(process.execPath, [tsc, '--noEmit', '-p', 'tsconfig.json'], { cwd: state.project, timeout: 300000 });
  t.equal(
    c.status,
    0,
    c.status === 0 ? `use-api.mts and use-api.cts compile (${c.seconds.toFixed(1)} s)` : c.describe(),
  );
  t.end();
});

test('cleanup', (t) => {
  if (state.work && process.env.PJRT_SCORE_KEEP_TMP === '1') t.comment(`kept ${state.work}`);
  else if (state.work) fs.rmSync(state.work, { recursive: true, force: true });
  t.end();
});
