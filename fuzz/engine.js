'use strict';
// A small coverage-guided fuzzer for one target, in-process. Feedback is V8's
// precise block coverage of the target's own scripts (node:inspector), plus
// the kind of error each input ends in (so new plugin diagnostics count as new
// behaviour where JS coverage cannot see into native code). Inputs that reach
// new blocks join the corpus; errors the target does not expect, and inputs
// that hang, are findings. Why not Jazzer.js: @jazzer.js/fuzzer 4.0.0 ships a
// prebuilt addon that needs glibc 2.38 (Debian 12 has 2.36), and older
// versions download their binary from outside the npm registry at install.
const crypto = require('node:crypto');
const fs = require('node:fs');
const inspector = require('node:inspector');
const path = require('node:path');
const { mutate } = require('./mutate');

/** Synchronous call on an in-process inspector session (its callbacks run before post returns). */
function post(session, method, params) {
  let out;
  let failure;
  session.post(method, params, (err, result) => {
    failure = err;
    out = result;
  });
  if (failure) throw failure;
  return out;
}

class Coverage {
  constructor(filter) {
    this.filter = filter;
    this.session = new inspector.Session();
    this.session.connect();
    post(this.session, 'Profiler.enable');
    post(this.session, 'Profiler.startPreciseCoverage', { callCount: true, detailed: true });
    this.zeroRanges = new Map(); // function key -> ranges once seen never run
    this.blocks = new Set(); // every block ever run: the coverage figure
  }

  /** Features of what ran since the last call: block ids with a hit-count bucket. */
  take() {
    const { result } = post(this.session, 'Profiler.takePreciseCoverage');
    const features = [];
    for (const script of result) {
      if (!this.filter(script.url)) continue;
      const url = script.url;
      for (const fn of script.functions) {
        if (fn.ranges.length === 0 || fn.ranges[0].count === 0) continue;
        const fnKey = `${url}@${fn.ranges[0].startOffset}`;
        const reported = new Set();
        for (const range of fn.ranges) {
          const id = `${url}:${range.startOffset}-${range.endOffset}`;
          reported.add(id);
          if (range.count === 0) {
            let zeros = this.zeroRanges.get(fnKey);
            if (!zeros) this.zeroRanges.set(fnKey, (zeros = new Set()));
            zeros.add(id);
          } else {
            features.push(`${id}#${bucket(range.count)}`);
            this.blocks.add(id);
          }
        }
        // A block that once ran 0 times and is now not reported ran as often as its parent.
        const zeros = this.zeroRanges.get(fnKey);
        if (zeros) {
          for (const id of zeros) {
            if (!reported.has(id)) {
              features.push(`${id}#inherited`);
              this.blocks.add(id);
            }
          }
        }
      }
    }
    return features;
  }

  stop() {
    post(this.session, 'Profiler.stopPreciseCoverage');
    this.session.disconnect();
  }
}

// libFuzzer's hit-count buckets: 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+.
function bucket(count) {
  if (count < 4) return count;
  if (count < 8) return 4;
  if (count < 16) return 8;
  if (count < 32) return 16;
  if (count < 128) return 32;
  return 128;
}

// An error's kind without its numbers and quoted parts, so "byte 17" and "byte 18" are one kind.
function errorKind(error) {
  const name = (error && error.name) || typeof error;
  const message = String((error && error.message) || error)
    .split('\n')[0]
    .replace(/"[^"]*"|'[^']*'|`[^`]*`|\[[^\]]*\]/g, 'Q')
    .replace(/0x[0-9a-f]+|\d+(\.\d+)?/gi, 'N')
    .slice(0, 120);
  return `${name}: ${message}`;
}

function sha1(data) {
  return crypto.createHash('sha1').update(data).digest('hex');
}

/**
 * Fuzzes `target` for `seconds` or `maxExecs` inputs, whichever ends first
 * (seconds Infinity: exactly maxExecs, the same inputs for the same seed on
 * any machine). delayMs slows each execution (tests only). Returns the figures.
 * target: { name, maxLength, scripts(url) -> bool, seeds() -> Buffer[], dictionary?: string[],
 *           setup?(), run(data) -> void | Promise, expected(error) -> bool, timeoutMs? }
 */
/** xorshift32: a fast, seeded random() in [0, 1), reproducible from its seed (0 counts as 1). */
function xorshift32(seed) {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state / 4294967296;
  };
}

async function fuzz(
  target,
  { seconds, maxExecs = Infinity, delayMs = 0, corpusDir, findingsDir, currentFile, seed = Date.now(), log = () => {} },
) {
  const random = xorshift32(seed);
  if (target.setup) await target.setup();
  const coverage = new Coverage(target.scripts);
  const seen = new Set();
  const corpus = [];
  const findings = new Map();
  const dictionary = (target.dictionary || []).map((w) => Buffer.from(w, 'utf8'));
  const timeoutMs = target.timeoutMs || 10_000;
  const currentFd = currentFile ? fs.openSync(currentFile, 'w') : null;
  let execs = 0;

  const record = (data, kind, detail) => {
    if (findings.has(kind)) {
      findings.get(kind).count++;
      return;
    }
    const file = path.join(findingsDir, `${target.name}-${sha1(data).slice(0, 12)}.bin`);
    fs.mkdirSync(findingsDir, { recursive: true });
    fs.writeFileSync(file, data);
    fs.writeFileSync(`${file}.txt`, `${kind}\n\n${detail}\n`);
    findings.set(kind, { kind, file, count: 1 });
    log({ type: 'finding', target: target.name, kind, file });
  };

  // Runs one input; true when it reached something new.
  const runOne = async (data) => {
    if (currentFd !== null) {
      fs.ftruncateSync(currentFd, 0);
      fs.writeSync(currentFd, data, 0, data.length, 0);
    }
    execs++;
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    let outcome = 'ok';
    try {
      const result = target.run(data);
      if (result && typeof result.then === 'function') {
        let timer;
        const timeout = new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { fuzzTimeout: true })),
            timeoutMs,
          );
        });
        try {
          await Promise.race([result, timeout]);
        } finally {
          clearTimeout(timer);
        }
      }
    } catch (error) {
      outcome = errorKind(error);
      if (error && error.fuzzTimeout) record(data, `hang: ${outcome}`, 'the target did not settle');
      else if (!target.expected(error)) record(data, outcome, (error && error.stack) || String(error));
    }
    let fresh = false;
    for (const feature of coverage.take().concat(`outcome:${outcome}`)) {
      if (!seen.has(feature)) {
        seen.add(feature);
        fresh = true;
      }
    }
    return fresh;
  };

  const addToCorpus = (data, persist) => {
    corpus.push(data);
    if (persist && corpusDir) {
      fs.mkdirSync(corpusDir, { recursive: true });
      fs.writeFileSync(path.join(corpusDir, sha1(data)), data);
    }
  };

  const started = Date.now();
  const deadline = started + seconds * 1000;
  // Seeds first, then what earlier runs kept.
  const initial = target.seeds().map((d) => Buffer.from(d));
  if (corpusDir && fs.existsSync(corpusDir)) {
    for (const f of fs.readdirSync(corpusDir).sort()) initial.push(fs.readFileSync(path.join(corpusDir, f)));
  }
  let seedCount = 0;
  for (const data of initial) {
    if (await runOne(data)) addToCorpus(data, false);
    seedCount++;
  }
  if (corpus.length === 0 && initial.length > 0) addToCorpus(initial[0], false);
  let lastReport = Date.now();
  let found = 0;
  while (Date.now() < deadline && execs < maxExecs) {
    const parent = corpus[Math.floor(random() * corpus.length)];
    const other = corpus[Math.floor(random() * corpus.length)];
    const child = mutate(parent, { random, other, dictionary, maxLength: target.maxLength || 4096 });
    if (await runOne(child)) {
      addToCorpus(child, true);
      found++;
    }
    if (Date.now() - lastReport > 2000) {
      lastReport = Date.now();
      log({ type: 'progress', target: target.name, execs, corpus: corpus.length, blocks: coverage.blocks.size });
    }
  }
  coverage.stop();
  if (currentFd !== null) fs.closeSync(currentFd);
  return {
    target: target.name,
    seconds: (Date.now() - started) / 1000,
    execs,
    seeds: seedCount,
    corpus: corpus.length,
    newInputs: found,
    blocks: coverage.blocks.size,
    features: seen.size,
    findings: [...findings.values()],
  };
}

module.exports = { fuzz, errorKind, xorshift32 };
