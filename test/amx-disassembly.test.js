'use strict';
// The AMX tile configuration as the CPU will read it (native/kernels/amx_asm.h): in
// both builds (the from-source g++ build in build/Release and the zig
// prebuild), every ldtilecfg must load a constant of the binary's read-only
// data, and those 64 bytes must be the configuration the tiles use, decoded
// here by the Intel SDM's layout (LDTILECFG: byte 0 palette, byte 1
// start_row, bytes 16-47 bytes per row of tiles 0-15 as u16, bytes 48-63
// rows of tiles 0-15), not by the addon's struct. On every AMX Xeon the old
// build loaded stack garbage here (GCC 12's intrinsic let the stores of the
// tile shapes be dropped) and faulted at load; no CPU without AMX runs these
// instructions, so only the binaries can show it on one.
const test = require('tape');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const prebuild = require('../scripts/build/prebuild.js');

const root = path.join(__dirname, '..');

function objdump(args) {
  const r = spawnSync('objdump', args, { encoding: 'utf8', maxBuffer: 1 << 30 });
  if (r.error) throw new Error(`objdump (binutils, which the build needs too) could not run: ${r.error.message}`);
  if (r.status !== 0) throw new Error(`objdump ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

/** `length` bytes of `file` at virtual address `address`, by objdump -s. */
function bytesAt(file, address, length) {
  const out = objdump([
    '-s',
    `--start-address=0x${address.toString(16)}`,
    `--stop-address=0x${(address + length).toString(16)}`,
    file,
  ]);
  const bytes = [];
  for (const line of out.split('\n')) {
    const m = /^ ([0-9a-f]+) ((?:[0-9a-f]{2,8} ){1,4})/.exec(line);
    if (!m) continue;
    for (const word of m[2].trim().split(' '))
      for (let i = 0; i < word.length; i += 2) bytes.push(parseInt(word.slice(i, i + 2), 16));
  }
  return bytes.slice(0, length);
}

/** Every ldtilecfg of `file`: its operand, and the address it loads when that is rip-relative. */
function tileConfigLoads(file) {
  return objdump(['-d', '--no-show-raw-insn', file])
    .split('\n')
    .filter((l) => /\bldtilecfg\b/.test(l))
    .map((l) => {
      const m = /ldtilecfg\s+(\S+)\s*#\s*([0-9a-f]+)/.exec(l);
      return { line: l.trim(), ripRelative: /\(%rip\)/.test(l), address: m ? parseInt(m[2], 16) : null };
    });
}

/** Decodes 64 bytes of LDTILECFG's memory operand (Intel SDM) into what it configures. */
function decodeTileConfig(b) {
  const u16 = (at) => b[at] | (b[at + 1] << 8);
  return {
    palette: b[0],
    startRow: b[1],
    reservedZero: b.slice(2, 16).every((x) => x === 0),
    tiles: Array.from({ length: 16 }, (_, t) => ({ bytesPerRow: u16(16 + 2 * t), rows: b[48 + t] })),
  };
}

if (process.arch !== 'x64') {
  test('AMX tile configuration: x86-64 builds only', (t) => {
    t.skip(`hardware x64: ${process.arch} has no AMX path; the x86-64 builds are checked on x86-64`);
    t.end();
  });
} else {
  if (!prebuild.prebuildIsCurrent(root)) {
    const r = spawnSync(process.execPath, [path.join(root, 'scripts', 'build', 'prebuild.js')], {
      cwd: root,
      stdio: 'inherit',
    });
    if (r.status !== 0) throw new Error('npm run build:prebuilds failed: the prebuild cannot be checked');
  }
  const builds = [
    ['g++ build (build/Release)', path.join(root, 'build', 'Release', 'pjrt_score.node')],
    ['zig prebuild', prebuild.prebuildPath(root)],
  ];
  for (const [label, file] of builds) {
    test(`${label}: every ldtilecfg loads the three 16 x 64-byte tiles from read-only data`, (t) => {
      t.ok(fs.existsSync(file), `${path.relative(root, file)} exists`);
      const loads = tileConfigLoads(file);
      t.ok(loads.length >= 1, `${loads.length} ldtilecfg in the binary (the kernel and its self-check)`);
      for (const load of loads) {
        t.ok(load.ripRelative && load.address !== null, `a constant, not the stack: ${load.line}`);
        if (load.address === null) continue;
        const bytes = bytesAt(file, load.address, 64);
        t.equal(bytes.length, 64, `64 bytes at 0x${load.address.toString(16)}`);
        const c = decodeTileConfig(bytes);
        t.equal(c.palette, 1, 'palette 1');
        t.equal(c.startRow, 0, 'start_row 0');
        t.ok(c.reservedZero, 'bytes 2-15 reserved, zero');
        const shapes = c.tiles.map((x) => `${x.rows}x${x.bytesPerRow}`);
        t.deepEqual(
          shapes,
          [...Array(3).fill('16x64'), ...Array(13).fill('0x0')],
          `tiles 0-2: 16 rows of 64 bytes, 3-15 unused (${shapes.slice(0, 4).join(' ')} ...)`,
        );
      }
      t.end();
    });
  }
}
