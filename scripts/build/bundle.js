'use strict';
/**
 * npm run bundle -- one archive that runs pjrt-score on a machine without
 * network (a GPU box behind a firewall): the package's runtime files (dist/,
 * bin/, package.json), the built addon, and its production dependencies,
 * laid out as an installed package. Plugins and models are not inside:
 * on the target, point `--plugin`/`PJRT_PLUGIN_PATH` at a plugin there (an
 * installed jax CUDA wheel's, say) and `--model` at a model directory.
 *
 *   node scripts/build/bundle.js [--out FILE]     default pjrt-score-<version>-<platform>-<arch>.tar.gz
 *
 * On the target: `tar xzf FILE && node pjrt-score/bin/pjrt-score.js serve ...`
 * or `require('./pjrt-score')`. Needs Node >= 20 there (the same major is
 * safest: the addon uses Node-API 8, which any Node >= 20 loads).
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const root = path.join(__dirname, '..', '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

function addonFiles() {
  const built = path.join('build', 'Release', 'pjrt_score.node');
  const files = fs.existsSync(path.join(root, built)) ? [built] : [];
  const prebuilds = path.join(root, 'prebuilds');
  if (fs.existsSync(prebuilds)) {
    for (const d of fs.readdirSync(prebuilds))
      for (const f of fs.readdirSync(path.join(prebuilds, d))) files.push(path.join('prebuilds', d, f));
  }
  if (files.length === 0) throw new Error('no built addon: run npm install (or npm run build:native) first');
  return files;
}

function productionDependencies() {
  const out = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: root, encoding: 'utf8' });
  return out
    .split('\n')
    .map((p) => path.relative(root, p.trim()))
    .filter((p) => p.startsWith('node_modules'));
}

function main() {
  const argv = process.argv.slice(2);
  const outArg = argv[argv.indexOf('--out') + 1];
  const out = path.resolve(
    argv.includes('--out') && outArg ? outArg : `pjrt-score-${pkg.version}-${os.platform()}-${os.arch()}.tar.gz`,
  );
  if (!fs.existsSync(path.join(root, 'dist', 'index.js'))) throw new Error('dist/ is missing: run npm run build first');
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-bundle-'));
  try {
    const top = path.join(stage, 'pjrt-score');
    const entries = ['package.json', 'dist', 'bin', ...addonFiles(), ...productionDependencies()];
    for (const entry of entries) fs.cpSync(path.join(root, entry), path.join(top, entry), { recursive: true });
    execFileSync('tar', ['czf', out, '-C', stage, 'pjrt-score']);
    process.stdout.write(`${out}: ${(fs.statSync(out).size / 2 ** 20).toFixed(1)} MiB (${entries.length} entries)\n`);
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

main();
