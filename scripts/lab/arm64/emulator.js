'use strict';
// An arm64 Node that runs on this x86-64 machine, for `npm run test:arm64`:
// Debian's nodejs:arm64 (and the libraries and arch-independent node-*
// packages it depends on) and qemu-user-static, fetched as .deb packages with
// apt-get into the cache (never installed into the system) and unpacked with
// dpkg -x: <cache>/arm64/root/ holds the arm64 file tree (QEMU_LD_PREFIX),
// <cache>/arm64/qemu/ the emulator. apt-get uses the machine's own package
// sources (/etc/apt) with a private state folder (<cache>/arm64/apt/) that
// adds the arm64 architecture for this download only; apt checks every .deb
// against the archive's signed index, as for any install.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

/** What the emulated Node needs: the arm64 Node and, being arch-independent, the modules Debian's build loads from /usr/share/nodejs. */
const ARM64_PACKAGES = ['nodejs:arm64', 'node-cjs-module-lexer', 'node-acorn', 'node-undici'];
/** The user-mode emulator, a static x86-64 binary. */
const QEMU_PACKAGES = ['qemu-user-static:amd64'];

class EmulatorUnavailable extends Error {}

function aptOptions(dir) {
  const opts = {
    'Dir::State::Lists': path.join(dir, 'lists'),
    'Dir::State::status': path.join(dir, 'status'),
    'Dir::Cache': path.join(dir, 'cache'),
    'APT::Architecture': 'amd64',
    'Debug::NoLocking': '1',
  };
  const args = Object.entries(opts).flatMap(([k, v]) => ['-o', `${k}=${v}`]);
  args.push('-o', 'APT::Architectures::=amd64', '-o', 'APT::Architectures::=arm64');
  // Root's apt drops to the _apt user for downloads, who cannot write into the cache.
  if (process.getuid && process.getuid() === 0) args.push('-o', 'APT::Sandbox::User=root');
  return args;
}

function apt(dir, args, cwd) {
  const r = spawnSync('apt-get', [...aptOptions(dir), ...args], { cwd, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.error || r.status !== 0) {
    const why = r.error
      ? r.error.message
      : `exit ${r.status}: ${(r.stderr || '').trim().split('\n').slice(-3).join(' / ')}`;
    throw new EmulatorUnavailable(`apt-get ${args.slice(0, 2).join(' ')} failed (${why})`);
  }
  return r.stdout;
}

/** The packages apt would install for `names` on an empty system, as pinned `name:arch=version` (no Recommends). */
function closure(dir, names) {
  const plan = apt(dir, ['install', '-s', '--no-install-recommends', ...names]);
  const pins = [];
  for (const m of plan.matchAll(/^Inst ([^\s:]+)(?::\S+)? \((\S+) [^[]*\[(\w+)\]\)/gm))
    pins.push(`${m[1]}:${m[3]}=${m[2]}`);
  if (pins.length === 0) throw new EmulatorUnavailable(`apt-get found nothing to fetch for ${names.join(' ')}`);
  return pins;
}

/** Downloads the closure of `names` into a fresh folder and unpacks every .deb into `into`. */
function fetchAndUnpack(dir, names, into, log) {
  const debs = path.join(dir, 'debs', path.basename(into));
  fs.rmSync(debs, { recursive: true, force: true });
  fs.mkdirSync(debs, { recursive: true });
  const pins = closure(dir, names);
  log(`downloading ${pins.length} packages for ${names.join(' ')}`);
  apt(dir, ['download', ...pins], debs);
  fs.rmSync(into, { recursive: true, force: true });
  fs.mkdirSync(into, { recursive: true });
  for (const deb of fs.readdirSync(debs).filter((f) => f.endsWith('.deb'))) {
    const r = spawnSync('dpkg', ['-x', path.join(debs, deb), into], { encoding: 'utf8' });
    if (r.error || r.status !== 0)
      throw new EmulatorUnavailable(`dpkg -x ${deb} failed (${r.error ? r.error.message : r.stderr.trim()})`);
  }
  fs.rmSync(debs, { recursive: true, force: true });
  return pins;
}

/**
 * The emulator and the arm64 file tree under <cacheDir>/arm64/, fetched once
 * (a stamp lists the packages). Throws EmulatorUnavailable, saying why, where
 * apt-get cannot fetch them.
 */
function ensureEmulator(cacheDir, log = () => {}) {
  const base = path.join(cacheDir, 'arm64');
  const root = path.join(base, 'root');
  const qemuDir = path.join(base, 'qemu');
  const stamp = path.join(base, 'packages.txt');
  const emulator = {
    root,
    qemu: path.join(qemuDir, 'usr', 'bin', 'qemu-aarch64-static'),
    node: path.join(root, 'usr', 'bin', 'node'),
  };
  if (fs.existsSync(stamp) && fs.existsSync(emulator.qemu) && fs.existsSync(emulator.node))
    return { ...emulator, fetched: false };
  const dir = path.join(base, 'apt');
  for (const sub of ['lists/partial', 'cache/archives/partial']) fs.mkdirSync(path.join(dir, sub), { recursive: true });
  fs.writeFileSync(path.join(dir, 'status'), '');
  fs.rmSync(stamp, { force: true });
  log('apt-get update (private state, architectures amd64 and arm64)');
  apt(dir, ['update', '-q']);
  const pins = [...fetchAndUnpack(dir, QEMU_PACKAGES, qemuDir, log), ...fetchAndUnpack(dir, ARM64_PACKAGES, root, log)];
  for (const f of [emulator.qemu, emulator.node])
    if (!fs.existsSync(f)) throw new EmulatorUnavailable(`the packages did not hold ${f}`);
  // The package holds an emulator per architecture (about 370 MB): only aarch64's is kept.
  const bin = path.dirname(emulator.qemu);
  for (const f of fs.readdirSync(bin))
    if (f !== path.basename(emulator.qemu)) fs.rmSync(path.join(bin, f), { recursive: true, force: true });
  fs.writeFileSync(stamp, `${pins.join('\n')}\n`);
  return { ...emulator, fetched: true };
}

/** argv and environment that run the arm64 `node` under the emulator. */
function emulatedNode(emulator, args, env = process.env) {
  return { command: emulator.qemu, args: [emulator.node, ...args], env: { ...env, QEMU_LD_PREFIX: emulator.root } };
}

module.exports = { ARM64_PACKAGES, QEMU_PACKAGES, EmulatorUnavailable, ensureEmulator, emulatedNode };
