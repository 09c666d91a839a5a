'use strict';
// A restarted service: time from `pjrt-score serve` starting to the answer of
// its first /v1/score request (small-10 shape), and how many programs it
// compiled (from /metrics). Run twice over one executable cache: cold, then warm.
// The time is split into its steps from the server's log: process start to
// the model load beginning, the load itself (open: the file's header and
// config; tokenizer; read, convert, upload, programs: the weights), then the
// first request.
//   node service-start.js <cacheDir> [packageRoot] [ids|text]
// packageRoot: whose bin/pjrt-score.js to start (default this checkout; the
// restart bench passes an older build of the project to compare with).
// ids (default) sends the request as token ids; text sends text of about the
// same shape, which a service must tokenize (and so build its tokenizer).
const http = require('node:http');
const path = require('node:path');
const { WORKLOADS, request, textRequest } = require('./workloads');
const { startServe } = require('../../lib/serve-child');

function post(port, pathname, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: pathname,
        method: data ? 'POST' : 'GET',
        headers: data ? { 'content-type': 'application/json', 'content-length': data.length } : {},
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

/** Clock ticks per second of /proc's CPU times, read once before anything is timed. */
const CLOCK_TICKS =
  Number(require('node:child_process').execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;

/**
 * CPU seconds (user + system, all threads) a process has used, from
 * /proc/<pid>/stat; NaN where there is none. On a shared machine this moves
 * less than wall time.
 */
function processCpuSeconds(pid) {
  try {
    const stat = require('node:fs').readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 of stat (11 and 12 after the command name), in clock ticks.
    const ticks = Number(fields[11]) + Number(fields[12]);
    return ticks / CLOCK_TICKS;
  } catch {
    return NaN;
  }
}

/** The server process, killed if this script fails (else it would outlive it). */
let child;

async function main() {
  const cache = process.argv[2];
  const packageRoot = path.resolve(process.argv[3] || path.join(__dirname, '..', '..', '..'));
  const { DEFAULT_MODEL } = require('../../../dist/model/default-model');
  const { CPU_PLUGIN } = require('../../../dist/runtime/plugin-path');
  const started = Date.now();
  let loaded = null;
  let loadedAt = 0;
  // CPU seconds of the server when the model was loaded: splits the process's CPU into load and first request.
  let loadedCpu = NaN;
  const server = startServe(['serve', '--port', '0', '--warmup', 'none'], {
    script: path.join(packageRoot, 'bin', 'pjrt-score.js'),
    env: {
      PJRT_SCORE_CACHE: cache,
      PJRT_SCORE_MODEL: process.env.PJRT_SCORE_MODEL || DEFAULT_MODEL.destination,
      PJRT_PLUGIN_PATH: process.env.PJRT_PLUGIN_PATH || CPU_PLUGIN.destination,
    },
    stderr: 'inherit',
    onLog: (e) => {
      // The Scorer's own event carries the load's steps; builds without them still log the load's end.
      if (e.event === 'model_loaded' && (e.steps || !loadedAt)) {
        if (e.steps) loaded = e;
        loadedAt = Date.now();
        loadedCpu = processCpuSeconds(child.pid);
      }
    },
  });
  child = server.child;
  const port = await server.listening();
  const input = process.argv[4] || 'ids';
  if (input !== 'ids' && input !== 'text') throw new Error(`input must be ids or text, got ${input}`);
  const body = input === 'text' ? textRequest(WORKLOADS['small-10'], 5) : request(WORKLOADS['small-10'], 5);
  let answer;
  let resets = 0;
  for (;;) {
    try {
      answer = await post(port, '/v1/score', {
        query: body.query,
        items: body.items,
        label_token_ids: body.labelTokenIds,
      });
    } catch (err) {
      // A connection the loading server dropped: retry as a client would, a few times, and say so.
      if (err.code !== 'ECONNRESET' || ++resets > 5) throw err;
      continue;
    }
    if (answer.status !== 503) break; // still loading: retry like a client behind a readiness probe
    await new Promise((r) => setTimeout(r, 50));
  }
  const answeredAt = Date.now();
  const cpuSeconds = processCpuSeconds(child.pid);
  const seconds = (answeredAt - started) / 1000;
  let steps;
  if (!loaded && loadedAt)
    steps = { startToLoaded: (loadedAt - started) / 1000, firstRequest: (answeredAt - loadedAt) / 1000 };
  if (loaded) {
    const loadSeconds = loaded.seconds;
    steps = {
      startToLoad: (loadedAt - started) / 1000 - loadSeconds,
      open: loaded.steps.openSeconds,
      // Built while the device decodes the weights (0 where the build's open step still includes it).
      tokenizer: loaded.steps.tokenizerSeconds ?? 0,
      read: loaded.steps.readSeconds,
      convert: loaded.steps.convertSeconds,
      upload: loaded.steps.uploadSeconds,
      // The load's own programs (decode, join), from the disk cache on a warm start; older builds have none.
      programs: loaded.steps.programSeconds ?? 0,
      loadOther:
        loadSeconds -
        loaded.steps.openSeconds -
        (loaded.steps.tokenizerSeconds ?? 0) -
        loaded.steps.readSeconds -
        loaded.steps.convertSeconds -
        loaded.steps.uploadSeconds -
        (loaded.steps.programSeconds ?? 0),
      firstRequest: (answeredAt - loadedAt) / 1000,
      // The sum of the steps above firstRequest: what a baseline without steps reports alone.
      startToLoaded: (loadedAt - started) / 1000,
    };
  }
  const metrics = (await post(port, '/metrics')).body;
  const compiles = Number(/^pjrt_score_jit_compiles_total(?:\{[^}]*\})? (\S+)/m.exec(metrics)?.[1] ?? NaN);
  child.kill('SIGTERM');
  await new Promise((r) => child.on('exit', r));
  const cpu = { toLoaded: loadedCpu, firstRequest: cpuSeconds - loadedCpu };
  process.stdout.write(
    `${JSON.stringify({ seconds, cpuSeconds, cpu, status: answer.status, compiles, weights: loaded?.weights, steps, resets })}\n`,
  );
}

main().catch((err) => {
  console.error(err);
  child?.kill('SIGKILL');
  process.exit(1);
});
