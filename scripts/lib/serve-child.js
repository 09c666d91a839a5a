'use strict';
// `pjrt-score serve` as a child process, and the wait for it: the one copy
// the tests (test/helpers/service.js), the benchmarks (bench:service, its
// open loop, the restart bench) and the lab's service runs (replicas) use.
//
//   startServe(args, options) -> handle
//     args: what follows the script (`serve --port 0 ...` for the command)
//     options.script: the script node runs (default this tree's bin/pjrt-score.js;
//       another build's, or a server that logs the same lines)
//     options.env: added to this process's environment
//     options.stderr: 'pipe' (kept: the last 200 chunks, in errors), 'inherit', or a
//       file's write stream
//     options.onLog(entry): called with each stdout line, parsed (a line that is
//       not JSON is { event: 'non_json', line }), before it is kept
//   handle: { child, pid, logs (the last 5,000 entries), stderr (the kept chunks),
//     exited (resolves { code, signal }), exit (null until then),
//     waitForLog(match, timeoutMs), listening() -> port, ready() -> url }
//
// waitForLog rejects when the child exits first or the time runs out, with
// the end of its stderr. The service logs `listening` (its port) as soon as
// it accepts connections and `ready` once the model is loaded.
const { spawn } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');

const BIN = path.join(__dirname, '..', '..', 'bin', 'pjrt-score.js');
const KEEP_LOGS = 5000;
const KEEP_STDERR = 200;

function startServe(args, { script = BIN, env = {}, stderr = 'pipe', onLog = null, timeoutMs = 300_000 } = {}) {
  const toStream = typeof stderr !== 'string';
  const child = spawn(process.execPath, [script, ...args], {
    stdio: ['ignore', 'pipe', toStream ? 'pipe' : stderr],
    env: { ...process.env, ...env },
  });
  const logs = [];
  const stderrTail = [];
  const waiters = [];
  let exit = null;
  const exited = new Promise((resolve) =>
    child.on('exit', (code, signal) => {
      exit = { code, signal };
      resolve(exit);
    }),
  );
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    let entry;
    try {
      entry = JSON.parse(line);
    } catch {
      entry = { event: 'non_json', line };
    }
    if (onLog) onLog(entry, line);
    logs.push(entry);
    if (logs.length > KEEP_LOGS) logs.splice(0, logs.length - KEEP_LOGS);
    for (const w of waiters.slice()) {
      if (w.match(entry)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(entry);
      }
    }
  });
  if (child.stderr) {
    if (toStream) child.stderr.pipe(stderr);
    child.stderr.on('data', (chunk) => {
      stderrTail.push(chunk.toString('utf8'));
      if (stderrTail.length > KEEP_STDERR) stderrTail.shift();
    });
  }
  const said = () => (stderrTail.length ? `; stderr: ${stderrTail.join('').slice(-2000)}` : '');

  const waitForLog = (match, ms = timeoutMs) => {
    const found = logs.find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching log line within ${ms} ms${said()}`)), ms);
      waiters.push({ match, resolve: (e) => (clearTimeout(timer), resolve(e)) });
      exited.then((e) => {
        clearTimeout(timer);
        reject(new Error(`server exited (${JSON.stringify(e)}) before the expected log line${said()}`));
      });
    });
  };
  const listening = async () => (await waitForLog((e) => e.event === 'listening')).port;
  const ready = async () => {
    const port = await listening();
    await waitForLog((e) => e.event === 'ready');
    return `http://127.0.0.1:${port}`;
  };

  return {
    child,
    pid: child.pid,
    logs,
    stderr: stderrTail,
    exited,
    get exit() {
      return exit;
    },
    waitForLog,
    listening,
    ready,
  };
}

module.exports = { BIN, startServe };
