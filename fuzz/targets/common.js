'use strict';
// Helpers shared by the fuzz targets: where the built library is, a scratch
// file per worker process, and the filter that keeps coverage to our scripts.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..');
const DIST = path.join(ROOT, 'dist');

let scratchDir = null;
/** A file in a per-process temporary directory (removed at exit). */
function scratchFile(name) {
  if (!scratchDir) {
    scratchDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-fuzz-'));
    process.on('exit', () => fs.rmSync(scratchDir, { recursive: true, force: true }));
  }
  return path.join(scratchDir, name);
}

/** A coverage filter: scripts whose URL contains one of `parts` (paths under dist/ or node_modules/). */
function scriptsUnder(...parts) {
  const needles = parts.map((p) => p.split('/').join(path.sep));
  return (url) => needles.some((n) => url.includes(n));
}

/** Runs `step`; an error `expected` accepts is swallowed (the next step still runs), any other is rethrown. */
function tolerate(expected, step) {
  try {
    return step();
  } catch (error) {
    if (!expected(error)) throw error;
    return undefined;
  }
}

/** A reader over a fuzz input's bytes: each call takes the next byte (0 when exhausted). */
function reader(data) {
  let at = 0;
  return () => (at < data.length ? data[at++] : 0);
}

module.exports = { ROOT, DIST, scratchFile, scriptsUnder, tolerate, reader };
