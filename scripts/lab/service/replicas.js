#!/usr/bin/env node
'use strict';
// Two `pjrt-score serve` replicas behind nginx, all on 127.0.0.1:
//   1. both replicas answer the same requests with identical scores;
//   2. bounded load goes through nginx (REQUESTS at CONCURRENCY);
//   3. one replica gets SIGTERM mid-load: it drains its in-flight work and
//      exits 0, nginx routes the rest to the other replica, no request fails.
// Needs Debian's nginx (apt-get update && apt-get install -y nginx) and the
// plugin and model in the cache (npx pjrt-score fetch). Not part of `npm test`.
//
//   node scripts/lab/service/replicas.js [--requests 300] [--concurrency 8] [--keep]
//
// Environment: PJRT_SCORE_BIN (default: this checkout's bin/pjrt-score.js),
// NGINX (default: nginx on PATH, else /usr/sbin/nginx), PJRT_SCORE_CACHE.
// Prints one line per check and ends with "N passed, N failed"; exit 0 iff
// every check passed, 2 when nginx is missing.
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { startServe } = require('../../lib/serve-child');

const HOST = '127.0.0.1';
const BIN = process.env.PJRT_SCORE_BIN || path.join(__dirname, '..', '..', '..', 'bin', 'pjrt-score.js');
const READY_TIMEOUT_MS = 240_000;
const REQUEST_TIMEOUT_MS = 90_000;
const OVERALL_TIMEOUT_MS = 15 * 60_000;

function parseArgs(argv) {
  const opts = { requests: 300, concurrency: 8, keep: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--keep') opts.keep = true;
    else if (a === '--requests' || a === '--concurrency') {
      const n = Number(argv[++i]);
      if (!Number.isInteger(n) || n < 1 || n > 100_000)
        throw new Error(`${a} needs a positive integer, got ${argv[i]}`);
      opts[a.slice(2)] = n;
    } else if (a === '-h' || a === '--help') {
      console.log('Usage: node scripts/lab/service/replicas.js [--requests 300] [--concurrency 8] [--keep]');
      process.exit(0);
    } else throw new Error(`unknown argument ${a}`);
  }
  if (opts.requests < 30) throw new Error('--requests must be at least 30 (the SIGTERM is sent after a third of them)');
  return opts;
}

// The requests: text queries and items in the SGLang Score API format. Label
// ids 9805 and 787 are " yes" and " no" in SmolLM2's vocabulary.
const REQUEST_SET = [
  {
    query: 'Is the sky blue on a clear day? Answer yes or no:',
    items: [' Yes, it is blue.', ' No, it is green.', ''],
    label_token_ids: [9805, 787],
    apply_softmax: true,
  },
  {
    query: 'Is this review positive? Review:',
    items: [' I loved it', ' It broke after a day', ' Fine, nothing special'],
    label_token_ids: [9805, 787],
  },
  {
    query: 'Question: what is the capital of France? Proposed answer:',
    items: [' Paris', ' London', ' Berlin', ' Madrid'],
    label_token_ids: [9805, 787],
    apply_softmax: true,
  },
  {
    query: 'Does the text mention an animal?',
    items: [' The cat sat on the mat.', ' Stocks fell sharply today.'],
    label_token_ids: [9805, 787, 9454],
  },
  {
    query: 'Translate to French: thank you ->',
    items: [' merci', ' danke', ' gracias', ' grazie', ' arigato'],
    label_token_ids: [9805, 787],
  },
  {
    query: 'Rate the sentence for grammar:',
    items: [' She go to school.', ' She goes to school.'],
    label_token_ids: [9805, 787],
    apply_softmax: true,
    item_first: true,
  },
];

function log(line) {
  process.stdout.write(`${line}\n`);
}

const results = [];
function check(ok, message) {
  results.push({ ok: Boolean(ok), message });
  log(`${ok ? 'ok' : 'not ok'} - ${message}`);
  return Boolean(ok);
}

function findNginx() {
  const candidates = [process.env.NGINX, 'nginx', '/usr/sbin/nginx'].filter(Boolean);
  for (const c of candidates) {
    const r = spawnSync(c, ['-v'], { encoding: 'utf8' });
    if (!r.error && r.status === 0) return { bin: c, version: (r.stderr || r.stdout).trim() };
  }
  return null;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, HOST, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** CPU seconds (user + system) a process has used so far, from /proc. */
function cpuSeconds(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  } catch {
    return null;
  }
}

function rssKiB(pid) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const get = (k) => Number((new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(status) || [])[1]);
    return { rss: get('VmRSS'), peak: get('VmHWM') };
  } catch {
    return null;
  }
}

/** A replica: `pjrt-score serve --port 0` (scripts/lib/serve-child.js), its JSON log lines (each with the time it came), its exit. */
function startReplica(name, dir) {
  const stdout = fs.createWriteStream(path.join(dir, `${name}.log`));
  const server = startServe(['serve', '--host', HOST, '--port', '0'], {
    script: BIN,
    stderr: fs.createWriteStream(path.join(dir, `${name}.stderr.log`)),
    onLog: (entry, line) => {
      stdout.write(`${line}\n`);
      entry.receivedAt = Date.now();
    },
    timeoutMs: READY_TIMEOUT_MS,
  });
  const replica = {
    name,
    child: server.child,
    pid: server.pid,
    logs: server.logs,
    port: null,
    exited: server.exited,
    get exit() {
      return server.exit;
    },
    listening: server.listening().then((port) => (replica.port = port)),
  };
  replica.listening.catch(() => {}); // waitHealthy reports it
  return replica;
}

async function waitHealthy(replica, deadline) {
  await Promise.race([
    replica.listening,
    sleep(Math.max(0, deadline - Date.now())).then(() =>
      Promise.reject(new Error(`${replica.name}: no "listening" log line in time`)),
    ),
  ]);
  for (let attempt = 0; Date.now() < deadline && replica.exit === null; attempt++) {
    try {
      const r = await fetch(`http://${HOST}:${replica.port}/health`, { signal: AbortSignal.timeout(5000) });
      if (r.status === 200) return;
    } catch {
      // not up yet
    }
    await sleep(Math.min(2000, 200 * (attempt + 1)));
  }
  throw new Error(
    `${replica.name} was not healthy within ${READY_TIMEOUT_MS / 1000} s (exit ${JSON.stringify(replica.exit)})`,
  );
}

async function score(base, body) {
  const started = Date.now();
  try {
    const r = await fetch(`${base}/v1/score`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await r.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      // reported below
    }
    return {
      status: r.status,
      json,
      text,
      upstream: r.headers.get('x-upstream'),
      ms: Date.now() - started,
      end: Date.now(),
    };
  } catch (err) {
    return {
      status: 0,
      json: null,
      text: String(err && err.message),
      upstream: null,
      ms: Date.now() - started,
      end: Date.now(),
    };
  }
}

function maxAbsDiff(a, b) {
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return Infinity;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    if (a[i].length !== b[i].length) return Infinity;
    for (let j = 0; j < a[i].length; j++) m = Math.max(m, Math.abs(a[i][j] - b[i][j]));
  }
  return m;
}

function nginxConfig(dir, listenPort, upstreams) {
  const q = (p) => JSON.stringify(p);
  return `# Written by scripts/lab/service/replicas.js; see deploy/README.md.
worker_processes 1;
pid ${q(path.join(dir, 'nginx.pid'))};
error_log ${q(path.join(dir, 'nginx-error.log'))} warn;

events {
    worker_connections 512;
}

http {
    log_format upstreams '$remote_addr "$request" $status upstream=$upstream_addr upstream_status=$upstream_status $request_time';
    access_log ${q(path.join(dir, 'nginx-access.log'))} upstreams;
    client_body_temp_path ${q(path.join(dir, 'body'))};
    proxy_temp_path ${q(path.join(dir, 'proxy'))};
    fastcgi_temp_path ${q(path.join(dir, 'fastcgi'))};
    uwsgi_temp_path ${q(path.join(dir, 'uwsgi'))};
    scgi_temp_path ${q(path.join(dir, 'scgi'))};

    upstream pjrt_score {
${upstreams.map((p) => `        server ${HOST}:${p} max_fails=1 fail_timeout=10s;`).join('\n')}
        keepalive 16;
    }

    server {
        listen ${HOST}:${listenPort};
        client_max_body_size 8m;

        location / {
            proxy_pass http://pjrt_score;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header X-Request-Id $request_id;
            # A replica that is gone (connection refused or reset) or draining
            # (503) hands the request to the next one. Scoring is a pure read,
            # so retrying a POST is safe: non_idempotent allows it.
            proxy_next_upstream error timeout http_502 http_503 non_idempotent;
            proxy_next_upstream_tries 2;
            proxy_next_upstream_timeout 60s;
            proxy_connect_timeout 2s;
            proxy_read_timeout 60s;
            add_header X-Upstream $upstream_addr always;
        }
    }
}
`;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const nginx = findNginx();
  if (!nginx) {
    console.error(
      'nginx was not found (tried $NGINX, nginx on PATH, /usr/sbin/nginx). Install it (Debian/Ubuntu, as root):',
    );
    console.error('  apt-get update && apt-get install -y nginx');
    console.error('then run again: node scripts/lab/service/replicas.js');
    process.exit(2);
  }
  if (!fs.existsSync(BIN)) {
    console.error(`pjrt-score CLI not found at ${BIN} (set PJRT_SCORE_BIN, or npm run build in the checkout)`);
    process.exit(2);
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-replicas-'));
  fs.chmodSync(dir, 0o755);
  log(`# ${nginx.version}; replicas: node ${path.relative(process.cwd(), BIN) || BIN} serve; work dir ${dir}`);
  log(
    `# load: ${opts.requests} requests at concurrency ${opts.concurrency} through nginx; SIGTERM to replica A after ${Math.floor(opts.requests / 3)}`,
  );

  const replicas = [];
  let nginxChild = null;
  const watchdog = setTimeout(() => {
    check(false, `finished within ${OVERALL_TIMEOUT_MS / 60000} minutes`);
    cleanup().finally(() => process.exit(1));
  }, OVERALL_TIMEOUT_MS);

  async function cleanup() {
    for (const r of replicas) if (r.exit === null) r.child.kill('SIGTERM');
    if (nginxChild && nginxChild.exitCode === null) nginxChild.kill('SIGQUIT'); // graceful stop of the master
    const exits = [
      ...replicas.map((r) => r.exited),
      nginxChild ? new Promise((res) => (nginxChild.exitCode !== null ? res() : nginxChild.on('exit', res))) : null,
    ].filter(Boolean);
    await Promise.race([Promise.all(exits), sleep(60_000)]);
    for (const r of replicas) if (r.exit === null) r.child.kill('SIGKILL');
    if (nginxChild && nginxChild.exitCode === null) nginxChild.kill('SIGKILL');
  }

  try {
    // 1. Replicas.
    const started = Date.now();
    replicas.push(startReplica('A', dir), startReplica('B', dir));
    const deadline = Date.now() + READY_TIMEOUT_MS;
    await Promise.all(replicas.map((r) => waitHealthy(r, deadline)));
    const [a, b] = replicas;
    check(
      true,
      `replicas healthy in ${((Date.now() - started) / 1000).toFixed(1)} s: A on ${HOST}:${a.port} (pid ${a.pid}), B on ${HOST}:${b.port} (pid ${b.pid})`,
    );

    // 2. Same request, same scores, from either replica (asked directly).
    const reference = [];
    let identical = 0;
    for (const body of REQUEST_SET) {
      const fromA = await score(`http://${HOST}:${a.port}`, body);
      const fromB = await score(`http://${HOST}:${b.port}`, body);
      const same =
        fromA.status === 200 &&
        fromB.status === 200 &&
        JSON.stringify(fromA.json.scores) === JSON.stringify(fromB.json.scores);
      if (same) identical++;
      else
        log(
          `#   differs for ${JSON.stringify(body.query)}: A ${fromA.status} ${fromA.text.slice(0, 300)} | B ${fromB.status} ${fromB.text.slice(0, 300)}`,
        );
      reference.push(fromA.json && fromA.json.scores);
    }
    check(
      identical === REQUEST_SET.length,
      `A and B return identical scores for the same request (${identical} of ${REQUEST_SET.length} requests, compared exactly)`,
    );

    // 3. nginx in front of both.
    const nginxPort = await freePort();
    const conf = path.join(dir, 'nginx.conf');
    fs.writeFileSync(conf, nginxConfig(dir, nginxPort, [a.port, b.port]));
    const tested = spawnSync(nginx.bin, ['-t', '-p', dir, '-e', path.join(dir, 'nginx-error.log'), '-c', conf], {
      encoding: 'utf8',
    });
    if (!check(tested.status === 0, `nginx -t accepts ${conf}`)) throw new Error(tested.stderr);
    nginxChild = spawn(
      nginx.bin,
      ['-p', dir, '-e', path.join(dir, 'nginx-error.log'), '-c', conf, '-g', 'daemon off;'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const viaNginx = `http://${HOST}:${nginxPort}`;
    let up = false;
    for (let i = 0; i < 50 && !up; i++) {
      await sleep(100);
      try {
        up = (await fetch(`${viaNginx}/health`, { signal: AbortSignal.timeout(2000) })).status === 200;
      } catch {
        // not listening yet
      }
    }
    if (!check(up, `nginx listens on ${HOST}:${nginxPort} and /health through it is 200`))
      throw new Error('nginx did not come up');

    // 4. Load, with a SIGTERM to A a third of the way in.
    const killAfter = Math.floor(opts.requests / 3);
    const responses = new Array(opts.requests);
    let next = 0;
    let completed = 0;
    let sigtermAt = null;
    const aUpstream = `${HOST}:${a.port}`;
    const bUpstream = `${HOST}:${b.port}`;
    const loadStarted = Date.now();
    const cpuBefore = cpuSeconds(b.pid);
    const worker = async () => {
      while (next < opts.requests) {
        const i = next++;
        const k = i % REQUEST_SET.length;
        const r = await score(viaNginx, REQUEST_SET[k]);
        r.kind = k;
        responses[i] = r;
        completed++;
        if (completed === killAfter && sigtermAt === null) {
          sigtermAt = Date.now();
          a.child.kill('SIGTERM');
          log(`# SIGTERM to A (pid ${a.pid}) after ${completed} responses`);
        }
      }
    };
    await Promise.all(Array.from({ length: opts.concurrency }, worker));
    const loadSeconds = (Date.now() - loadStarted) / 1000;
    const cpuAfter = cpuSeconds(b.pid);
    const aExit = await Promise.race([a.exited, sleep(60_000).then(() => null)]);

    const failed = responses.filter((r) => r.status !== 200);
    check(
      failed.length === 0,
      `all ${opts.requests} requests through nginx answered 200 (${failed.length} failed${
        failed.length
          ? `: ${failed
              .slice(0, 5)
              .map((r) => `${r.status} ${r.text.slice(0, 200)}`)
              .join(' | ')}`
          : ''
      })`,
    );
    const byUpstream = {};
    for (const r of responses) byUpstream[r.upstream || 'none'] = (byUpstream[r.upstream || 'none'] || 0) + 1;
    log(
      `# ${opts.requests} requests in ${loadSeconds.toFixed(1)} s (${(opts.requests / loadSeconds).toFixed(1)} req/s); served by ${JSON.stringify(byUpstream).replace(aUpstream, 'A').replace(bUpstream, 'B')}`,
    );
    const latencies = responses.map((r) => r.ms).sort((x, y) => x - y);
    log(
      `# latency through nginx: p50 ${latencies[Math.floor(latencies.length * 0.5)]} ms, p95 ${latencies[Math.floor(latencies.length * 0.95)]} ms, max ${latencies[latencies.length - 1]} ms`,
    );
    check(
      (byUpstream[aUpstream] || 0) > 0 && (byUpstream[bUpstream] || 0) > 0,
      'both replicas served load through nginx',
    );
    const retried = responses.filter((r) => r.upstream && r.upstream.includes(',')).length;
    log(`# requests nginx moved to the other replica (X-Upstream lists two): ${retried}`);

    // Scores under load: every answer equals the direct answer for that request.
    let worst = 0;
    let exact = 0;
    for (const r of responses) {
      if (r.status !== 200) continue;
      const d = maxAbsDiff(r.json.scores, reference[r.kind]);
      worst = Math.max(worst, d);
      if (d === 0) exact++;
    }
    check(
      worst <= 1e-6,
      `scores under load equal the direct answers: max |diff| ${worst.toExponential(2)} (${exact} of ${opts.requests - failed.length} bit-identical; waiting requests that share a query are batched together)`,
    );

    // 5. The drained replica.
    check(sigtermAt !== null, 'SIGTERM was sent mid-load');
    check(aExit && aExit.code === 0, `A exited 0 after SIGTERM (${JSON.stringify(aExit)})`);
    const draining = a.logs.find((e) => e.event === 'draining');
    const closed = a.logs.find((e) => e.event === 'closed');
    const inFlight = draining ? (draining.in_flight || 0) + (draining.queue_depth || 0) : 0;
    check(
      draining && closed,
      `A logged "draining" then "closed" (${closed && sigtermAt ? `${closed.receivedAt - sigtermAt} ms after SIGTERM` : 'missing'})`,
    );
    const drainedOnA = responses.filter(
      (r) => r.upstream === aUpstream && r.end > sigtermAt && r.status === 200,
    ).length;
    check(
      inFlight > 0 || drainedOnA > 0,
      `A had work when SIGTERM came (in_flight ${draining ? draining.in_flight : '?'}, queue_depth ${draining ? draining.queue_depth : '?'}); ${drainedOnA} of its responses completed after the signal`,
    );
    // From the signal on, A answers new work with 503 (draining) or refuses the
    // connection (closed): nginx must have handed every later request to B.
    const sentAfter = responses.filter((r) => sigtermAt !== null && r.end - r.ms > sigtermAt + 200);
    const answeredByA = sentAfter.filter((r) => (r.upstream || '').split(', ').pop() === aUpstream).length;
    check(
      sentAfter.length > 0 && answeredByA === 0,
      `requests sent after the SIGTERM were all answered by B (${sentAfter.length} requests, ${answeredByA} answered by A)`,
    );

    // 6. Memory of the survivor, for sizing deploy/k8s (see deploy/README.md).
    const mem = rssKiB(b.pid);
    if (mem)
      log(
        `# replica B memory after the load: RSS ${(mem.rss / 1024).toFixed(0)} MiB, peak RSS ${(mem.peak / 1024).toFixed(0)} MiB`,
      );
    if (cpuBefore !== null && cpuAfter !== null) {
      log(
        `# replica B CPU during the load: ${(cpuAfter - cpuBefore).toFixed(1)} s in ${loadSeconds.toFixed(1)} s = ${((cpuAfter - cpuBefore) / loadSeconds).toFixed(2)} cores on average (${os.cpus().length} cores here)`,
      );
    }
    const nginxErrors = fs.existsSync(path.join(dir, 'nginx-error.log'))
      ? fs.readFileSync(path.join(dir, 'nginx-error.log'), 'utf8').trim().split('\n').filter(Boolean)
      : [];
    log(
      `# nginx error log: ${nginxErrors.length} lines${nginxErrors.length ? `, e.g. ${nginxErrors.slice(-2).join(' / ').slice(0, 400)}` : ''}`,
    );
  } catch (err) {
    check(false, `unexpected error: ${err && err.stack ? err.stack : err}`);
  } finally {
    clearTimeout(watchdog);
    await cleanup();
    const failed = results.filter((r) => !r.ok).length;
    if (opts.keep || failed) log(`# kept ${dir} (replica logs, nginx.conf, nginx logs)`);
    else fs.rmSync(dir, { recursive: true, force: true });
    log(`${results.length - failed} passed, ${failed} failed`);
    process.exitCode = failed === 0 && results.length > 0 ? 0 : 1;
  }
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
