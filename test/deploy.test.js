'use strict';
// deploy/: the Dockerfile and the Kubernetes manifests agree with each other
// and with the service. No cluster or Docker here, so the manifests are read
// by the `yaml` package and checked against the official Kubernetes schemas
// (kubernetes-models) and KEDA's CRD schema, with unknown fields caught by
// the TypeScript compiler against the same packages' types
// (test/helpers/k8s-manifests.js); the probe paths and the image's
// HEALTHCHECK command run against a real `pjrt-score serve` on 127.0.0.1.
const test = require('tape');
const { spawnSync } = require('node:child_process');
const { startServe } = require('../scripts/lib/serve-child');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const deployDir = path.join(root, 'deploy');
const k8sDir = path.join(deployDir, 'k8s');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const BIN = path.join(root, 'bin', 'pjrt-score.js');
const { DEFAULT_SERVE_OPTIONS } = require('../dist/server'); // the service's defaults, as pjrt-score/server exports them
const { parseManifests, schemaProblems, typeProblems } = require('./helpers/k8s-manifests');
const kedaDir = path.join(deployDir, 'keda');

// ---------------------------------------------------------------------------
// The Dockerfile: instructions with continuation lines joined, ARG defaults
// substituted, stages split at FROM.

const INSTRUCTIONS = new Set([
  'FROM',
  'RUN',
  'CMD',
  'LABEL',
  'EXPOSE',
  'ENV',
  'ADD',
  'COPY',
  'ENTRYPOINT',
  'VOLUME',
  'USER',
  'WORKDIR',
  'ARG',
  'ONBUILD',
  'STOPSIGNAL',
  'HEALTHCHECK',
  'SHELL',
]);

function parseDockerfile(text) {
  const instructions = [];
  let current = null;
  text.split('\n').forEach((raw, i) => {
    if (current === null && /^\s*#/.test(raw)) return;
    if (current === null && raw.trim() === '') return;
    const line = raw.replace(/\s+$/, '');
    const continued = line.endsWith('\\');
    const body = continued ? line.slice(0, -1) : line;
    if (current === null) current = { text: body.trim(), lineNo: i + 1 };
    else if (!/^\s*#/.test(body)) current.text += ` ${body.trim()}`;
    if (!continued) {
      const m = /^(\w+)\s+([\s\S]*)$/.exec(current.text);
      instructions.push({
        keyword: m ? m[1].toUpperCase() : current.text,
        args: m ? m[2] : '',
        lineNo: current.lineNo,
      });
      current = null;
    }
  });
  return instructions;
}

function dockerStages(instructions) {
  const args = {};
  const stages = [];
  for (const ins of instructions) {
    if (ins.keyword === 'ARG') {
      const [name, value] = ins.args.split('=');
      if (value !== undefined) args[name.trim()] = value.trim();
    }
    if (ins.keyword === 'FROM')
      stages.push({ from: ins.args.replace(/\$\{(\w+)\}/g, (_, n) => args[n] ?? ''), instructions: [], env: {} });
    else if (stages.length) {
      const stage = stages[stages.length - 1];
      stage.instructions.push(ins);
      if (ins.keyword === 'ENV') {
        for (const m of ins.args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) stage.env[m[1]] = m[2].replace(/^"|"$/g, '');
      }
    }
  }
  return { args, stages };
}

const execForm = (ins) => JSON.parse(ins.args);

// ---------------------------------------------------------------------------

const dockerfile = parseDockerfile(fs.readFileSync(path.join(deployDir, 'Dockerfile'), 'utf8'));
const { args: dockerArgs, stages } = dockerStages(dockerfile);
const finalStage = stages[stages.length - 1];
const find = (stage, keyword) => stage.instructions.filter((i) => i.keyword === keyword);

const readDir = (dir) =>
  fs
    .readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()
    .flatMap((file) =>
      parseManifests(fs.readFileSync(path.join(dir, file), 'utf8'), file).map((doc) => ({ file, doc })),
    );
const manifests = readDir(k8sDir);
const kedaFiles = readDir(kedaDir);
const batchDir = path.join(deployDir, 'batch');
const batchFiles = readDir(batchDir);
const [scaledObject] = kedaFiles.filter((m) => m.doc.kind === 'ScaledObject').map((m) => m.doc);
const [kedaKustomization] = kedaFiles.filter((m) => m.doc.kind === 'Kustomization').map((m) => m.doc);
const byKind = (kind) => manifests.filter((m) => m.doc.kind === kind).map((m) => m.doc);
const [deployment] = byKind('Deployment');
const [service] = byKind('Service');
const [hpa] = byKind('HorizontalPodAutoscaler');
const [pdb] = byKind('PodDisruptionBudget');
const [kustomization] = byKind('Kustomization');
const pod = deployment.spec.template.spec;
const [container] = pod.containers;
const containerPort = (ref) => container.ports.find((p) => p.name === ref || p.containerPort === ref);
const envOf = (name) => (container.env || []).find((e) => e.name === name)?.value;

test('YAML: the yaml package reads the manifests strictly (YAML 1.2, unique keys)', (t) => {
  t.ok(manifests.length >= 5, `read ${manifests.length} objects from deploy/k8s/*.yaml`);
  t.throws(() => parseManifests('a: 1\na: 2\n', 'dup.yaml'), /dup\.yaml/, 'a duplicate key is refused');
  t.throws(() => parseManifests('a: [1\n', 'bad.yaml'), /bad\.yaml/, 'a syntax error is refused');
  t.deepEqual(
    parseManifests('a: yes\nb: "1"\n', 'v12.yaml'),
    [{ a: 'yes', b: '1' }],
    'YAML 1.2: yes is a string, as Kubernetes reads it',
  );
  t.end();
});

test('manifests: each passes the official schema of its kind, and names no unknown field', async (t) => {
  const objects = [...manifests, ...kedaFiles.filter((m) => m.doc.kind === 'ScaledObject'), ...batchFiles].filter(
    (m) => m.doc.kind !== 'Kustomization',
  );
  for (const { file, doc } of objects) {
    t.deepEqual(
      await schemaProblems(doc),
      [],
      `${file}: ${doc.apiVersion} ${doc.kind} ${doc.metadata.name} passes its schema`,
    );
  }
  t.deepEqual(
    typeProblems(objects.map(({ file, doc }) => ({ name: `${file} ${doc.kind}`, object: doc }))),
    [],
    'no unknown or mistyped field (tsc against the same types)',
  );

  const broken = JSON.parse(JSON.stringify(deployment));
  broken.spec.template.spec.containers[0].env = [{ name: 'PORT', value: 30000 }];
  t.ok(
    (await schemaProblems(broken)).some((p) => /env\/0\/value/.test(p)),
    'the schema catches a non-string env value',
  );
  const misspelt = JSON.parse(JSON.stringify(deployment));
  misspelt.spec.template.spec.containers[0].readinesProbe = misspelt.spec.template.spec.containers[0].readinessProbe;
  const noTriggers = JSON.parse(JSON.stringify(scaledObject));
  delete noTriggers.spec.triggers;
  t.ok(
    (await schemaProblems(noTriggers)).some((p) => /triggers/.test(p)),
    "KEDA's schema catches a ScaledObject without triggers",
  );
  const typos = typeProblems([
    { name: 'misspelt', object: misspelt },
    { name: 'keda', object: { ...scaledObject, spec: { ...scaledObject.spec, minReplicas: 2 } } },
  ]);
  t.ok(
    typos.some((p) => p.startsWith('misspelt') && p.includes('readinesProbe')),
    'tsc names a misspelt Deployment field',
  );
  t.ok(
    typos.some((p) => p.startsWith('keda') && p.includes('minReplicas')),
    'and a misspelt ScaledObject field',
  );
  t.deepEqual(
    [...kustomization.resources].sort(),
    manifests
      .filter((m) => m.doc.kind !== 'Kustomization')
      .map((m) => m.file)
      .filter((f, i, a) => a.indexOf(f) === i)
      .sort(),
    'kustomization.yaml lists every manifest',
  );
});

test('Deployment, Service, PDB: labels, ports and image agree with the package and the service', (t) => {
  const podLabels = deployment.spec.template.metadata.labels;
  const selects = (selector) => Object.entries(selector).every(([k, v]) => podLabels[k] === v);
  t.ok(selects(deployment.spec.selector.matchLabels), 'the Deployment selects its own pods');
  t.ok(selects(service.spec.selector), 'the Service selects the pods');
  t.ok(selects(pdb.spec.selector.matchLabels), 'the PodDisruptionBudget selects the pods');
  t.equal(pod.containers.length, 1, 'one container');
  t.equal(
    container.image,
    `${pkg.name}:${pkg.version}`,
    `image ${pkg.name}:${pkg.version} (package.json version; README tells how to retag)`,
  );

  const http = containerPort('http');
  t.ok(http, 'a container port named http');
  t.equal(
    http.containerPort,
    DEFAULT_SERVE_OPTIONS.port,
    `containerPort ${http.containerPort} is the service's default port`,
  );
  if (envOf('PJRT_SCORE_PORT') !== undefined)
    t.equal(Number(envOf('PJRT_SCORE_PORT')), http.containerPort, 'PJRT_SCORE_PORT equals the containerPort');
  const [svcPort] = service.spec.ports;
  t.ok(containerPort(svcPort.targetPort), `Service targetPort ${svcPort.targetPort} is a container port`);
  t.equal(
    svcPort.port,
    DEFAULT_SERVE_OPTIONS.port,
    'the Service listens on the same port as the service (SGLang clients keep their URL)',
  );
  t.notOk(container.command, 'no command: the image ENTRYPOINT/CMD runs');
  if (container.args)
    t.deepEqual(container.args, execForm(find(finalStage, 'CMD')[0]), 'args, if set, equal the image CMD');
  t.end();
});

test('probes: readiness on /readyz, liveness on /livez, startup covering load and warmup', (t) => {
  for (const kind of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
    const probe = container[kind];
    t.ok(probe && probe.httpGet, `${kind} is an httpGet probe`);
    if (!(probe && probe.httpGet)) continue;
    t.ok(containerPort(probe.httpGet.port), `${kind} targets container port ${probe.httpGet.port}`);
  }
  t.equal(container.readinessProbe.httpGet.path, '/readyz', 'readiness on /readyz (503 while loading or draining)');
  t.equal(container.livenessProbe.httpGet.path, '/livez', 'liveness on /livez (200 while the process answers)');
  t.equal(container.startupProbe.httpGet.path, '/readyz', 'startup on /readyz');
  const startupBudget = container.startupProbe.periodSeconds * container.startupProbe.failureThreshold;
  t.ok(startupBudget >= 120, `the startup probe allows ${startupBudget} s for model load and warmup`);
  const liveBudget = container.livenessProbe.periodSeconds * container.livenessProbe.failureThreshold;
  t.ok(liveBudget >= 20, `liveness tolerates ${liveBudget} s of silence`);
  const preStop = pod.containers[0].lifecycle?.preStop?.exec?.command || [];
  const preStopSeconds = preStop[0] === 'sleep' ? Number(preStop[1]) : 0;
  const drainDelayMs = Number(envOf('PJRT_SCORE_DRAIN_DELAY_MS') || DEFAULT_SERVE_OPTIONS.drainDelayMs);
  t.ok(drainDelayMs > 0, `readiness fails first on SIGTERM: PJRT_SCORE_DRAIN_DELAY_MS ${drainDelayMs}`);
  const readinessNotice = container.readinessProbe.periodSeconds * container.readinessProbe.failureThreshold;
  t.ok(
    drainDelayMs / 1000 >= readinessNotice,
    `the drain delay (${drainDelayMs / 1000} s) outlasts the readiness probe's notice (${readinessNotice} s)`,
  );
  const timeoutMs = Number(envOf('PJRT_SCORE_TIMEOUT_MS') || DEFAULT_SERVE_OPTIONS.timeoutMs);
  // lib/cli/serve.ts exits after the drain or after drain delay + timeout + 15 s, whichever is first.
  const needed = preStopSeconds + drainDelayMs / 1000 + timeoutMs / 1000 + 15;
  t.ok(
    pod.terminationGracePeriodSeconds >= needed,
    `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} >= preStop ${preStopSeconds} s + drain delay ${drainDelayMs / 1000} s + request timeout ${timeoutMs / 1000} s + drain guard 15 s`,
  );
  t.end();
});

test('resources, security, writable paths agree with the image', (t) => {
  const { requests, limits } = container.resources;
  const bytes = (q) => {
    const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(q));
    const unit = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, k: 1e3, M: 1e6, G: 1e9, T: 1e12 }[m[2]] || 1;
    return Number(m[1]) * unit;
  };
  t.ok(requests.cpu, 'a CPU request (the HPA computes utilization against it)');
  // Measured (deploy/README.md "Sizing"): 1.3-1.4 GiB ready, 1.6-1.7 GiB peak under load, 1.98 GiB worst.
  t.ok(
    bytes(requests.memory) >= 1.5 * 2 ** 30,
    `memory request ${requests.memory} covers the measured working set (>= 1.5 GiB)`,
  );
  t.ok(
    bytes(limits.memory) >= bytes(requests.memory) && bytes(limits.memory) >= 2.5 * 2 ** 30,
    `memory limit ${limits.memory} >= request and above the worst measured peak (1.98 GiB)`,
  );
  // Guaranteed QoS with whole CPUs: the static CPU manager's exclusive CPUs, which both thread pools follow.
  t.ok(
    /^[1-9]\d*$/.test(String(limits.cpu)) && String(limits.cpu) === String(requests.cpu),
    `a CPU limit of whole CPUs equal to the request (${requests.cpu} / ${limits.cpu})`,
  );
  t.equal(String(limits.memory), String(requests.memory), 'memory limit equal to the request (Guaranteed QoS)');

  const user = find(finalStage, 'USER').pop();
  const uid = Number(String(user && user.args).split(':')[0]);
  t.ok(Number.isInteger(uid) && uid > 0, `the image runs as a numeric non-root user (USER ${user && user.args})`);
  t.ok(pod.securityContext.runAsNonRoot, 'runAsNonRoot');
  t.equal(pod.securityContext.runAsUser, uid, 'runAsUser equals the image USER');
  t.equal(container.securityContext.readOnlyRootFilesystem, true, 'read-only root filesystem');
  const cache = finalStage.env.PJRT_SCORE_CACHE;
  t.ok(cache, `the image sets PJRT_SCORE_CACHE (${cache})`);
  const mounts = container.volumeMounts.map((m) => m.mountPath);
  t.ok(mounts.includes(`${cache}/executables`), `the compile cache ${cache}/executables is a writable volume`);
  t.notOk(mounts.includes(cache), 'the plugin and model in the image are not hidden by a volume');
  const volumes = new Set(pod.volumes.map((v) => v.name));
  t.ok(
    container.volumeMounts.every((m) => volumes.has(m.name)),
    'every mount has its volume',
  );
  t.end();
});

test('API keys come from a Secret mounted read-only, named by PJRT_SCORE_API_KEY_FILE', (t) => {
  const file = envOf('PJRT_SCORE_API_KEY_FILE');
  t.ok(file, `PJRT_SCORE_API_KEY_FILE is set (${file})`);
  const mount = container.volumeMounts.find((m) => file && file.startsWith(`${m.mountPath}/`));
  t.ok(mount && mount.readOnly === true, `the file is under a read-only mount (${mount && mount.mountPath})`);
  const volume = mount && pod.volumes.find((v) => v.name === mount.name);
  t.ok(
    volume && volume.secret && volume.secret.secretName,
    `that mount is the Secret ${volume && volume.secret && volume.secret.secretName}`,
  );
  t.notOk(volume && volume.secret && volume.secret.optional, 'not optional: without the Secret the pod does not start');
  t.notOk(
    (container.env || []).some((e) => e.name === 'PJRT_SCORE_API_KEY'),
    'no key in the manifests themselves',
  );
  t.end();
});

test('HorizontalPodAutoscaler targets the Deployment on CPU', (t) => {
  const ref = hpa.spec.scaleTargetRef;
  t.equal(ref.kind, 'Deployment', 'targets a Deployment');
  t.equal(ref.apiVersion, deployment.apiVersion, 'with its apiVersion');
  t.equal(ref.name, deployment.metadata.name, `named ${deployment.metadata.name}`);
  const cpu = hpa.spec.metrics.find((m) => m.type === 'Resource' && m.resource.name === 'cpu');
  t.ok(cpu && cpu.resource.target.type === 'Utilization', 'scales on CPU utilization');
  const u = cpu.resource.target.averageUtilization;
  t.ok(u > 0 && u <= 100, `target ${u}%`);
  t.ok(
    hpa.spec.minReplicas >= 1 && hpa.spec.minReplicas <= hpa.spec.maxReplicas,
    `replicas ${hpa.spec.minReplicas}..${hpa.spec.maxReplicas}`,
  );
  t.ok(
    deployment.spec.replicas >= hpa.spec.minReplicas && deployment.spec.replicas <= hpa.spec.maxReplicas,
    'the Deployment starts within the HPA range',
  );
  t.ok(pdb.spec.minAvailable < hpa.spec.minReplicas, 'the PDB leaves room to drain a node at the minimum size');
  t.end();
});

test('KEDA ScaledObject (deploy/keda) scales the Deployment on the queue gauges the service exports', async (t) => {
  const ref = scaledObject.spec.scaleTargetRef;
  t.equal(ref.name, deployment.metadata.name, `targets the Deployment ${deployment.metadata.name}`);
  t.equal(ref.kind ?? 'Deployment', 'Deployment', 'a Deployment');
  const [trigger] = scaledObject.spec.triggers;
  t.equal(trigger.type, 'prometheus', 'a Prometheus trigger');
  const names = [...trigger.metadata.query.matchAll(/([a-z_:]+)\{/g)].map((m) => m[1]);
  t.ok(names.length > 0, `its query reads ${names.join(', ')}`);
  // The names the service really exports (lib/server/telemetry/metrics.ts), from a registry of its own.
  const { createScoringService } = require('../dist/server');
  const svc = createScoringService({
    logger: require('../dist/server').silentLogger,
    loadBackend: () => new Promise(() => undefined),
  });
  const exported = new Set((await svc.registry.getMetricsAsJSON()).map((m) => m.name));
  await svc.close();
  t.ok(
    names.every((n) => exported.has(n)),
    `the service exports them (${names.filter((n) => !exported.has(n)).join(', ') || 'all'})`,
  );
  t.ok(Number(trigger.metadata.threshold) > 0, `threshold ${trigger.metadata.threshold} per replica`);
  t.ok(
    scaledObject.spec.minReplicaCount >= 1 && scaledObject.spec.minReplicaCount <= scaledObject.spec.maxReplicaCount,
    `replicas ${scaledObject.spec.minReplicaCount}..${scaledObject.spec.maxReplicaCount}`,
  );
  t.ok(
    pdb.spec.minAvailable < scaledObject.spec.minReplicaCount,
    'the PDB leaves room to drain a node at the minimum size',
  );
  t.ok(
    kedaKustomization.resources.includes('../k8s') && kedaKustomization.resources.includes('scaledobject.yaml'),
    'deploy/keda/kustomization.yaml builds on deploy/k8s',
  );
  const patches = kedaKustomization.patches.map(
    (p) => parseManifests(fs.readFileSync(path.join(kedaDir, p.path), 'utf8'), p.path)[0],
  );
  t.ok(
    patches.some(
      (p) => p.$patch === 'delete' && p.kind === 'HorizontalPodAutoscaler' && p.metadata.name === hpa.metadata.name,
    ),
    'and drops the CPU HorizontalPodAutoscaler (KEDA makes its own)',
  );
  const scrape = patches.find((p) => p.kind === 'Deployment');
  t.equal(scrape?.metadata.name, deployment.metadata.name, 'a patch of the Deployment lets Prometheus scrape');
  t.equal(scrape?.spec.template.spec.containers[0].name, container.name, 'naming its container');
  t.end();
});

test('Dockerfile: node:20-slim, tarball installed without scripts, fetch at build time, EXPOSE/CMD/HEALTHCHECK', (t) => {
  const unknown = dockerfile.filter((i) => !INSTRUCTIONS.has(i.keyword));
  t.deepEqual(
    unknown.map((i) => `line ${i.lineNo}: ${i.keyword}`),
    [],
    'only Dockerfile instructions',
  );
  t.ok(
    stages.every((s) => s.from.split(' ')[0] === 'node:20-slim'),
    `every stage FROM node:20-slim (${stages.map((s) => s.from).join('; ')})`,
  );
  const tarball = `${pkg.name}-${pkg.version}.tgz`;
  t.equal(dockerArgs.TARBALL, tarball, `ARG TARBALL defaults to what npm pack makes (${tarball})`);
  const runs = stages.flatMap((s) => find(s, 'RUN')).map((i) => i.args);
  t.ok(
    runs.some((r) => /npm install\b[^&]*--ignore-scripts[^&]*\.tgz/.test(r)),
    'RUN npm install --ignore-scripts <tarball>',
  );
  t.ok(
    runs.some((r) => /pjrt-score fetch/.test(r)),
    'RUN pjrt-score fetch at build time',
  );
  t.ok(
    stages.every((s) => !find(s, 'ENV').length || s.env.PJRT_SCORE_CACHE === finalStage.env.PJRT_SCORE_CACHE),
    'the same PJRT_SCORE_CACHE in the fetch stage and the final stage',
  );
  const dockerignore = fs.readFileSync(path.join(deployDir, '.dockerignore'), 'utf8');
  t.ok(/^!pjrt-score-\*\.tgz$/m.test(dockerignore), '.dockerignore lets the tarball into the build context');

  const exposed = find(finalStage, 'EXPOSE').map((i) => Number(i.args.split('/')[0]));
  t.deepEqual(exposed, [DEFAULT_SERVE_OPTIONS.port], `EXPOSE ${exposed} is the service's default port`);
  t.equal(exposed[0], containerPort('http').containerPort, 'and the manifest containerPort');
  if (finalStage.env.PJRT_SCORE_PORT)
    t.equal(Number(finalStage.env.PJRT_SCORE_PORT), exposed[0], 'ENV PJRT_SCORE_PORT equals EXPOSE');

  const cmd = execForm(find(finalStage, 'CMD').pop());
  t.deepEqual(cmd.slice(0, 2), [Object.keys(pkg.bin)[0], 'serve'], `CMD runs ${Object.keys(pkg.bin)[0]} serve`);
  t.equal(cmd[cmd.indexOf('--host') + 1], '0.0.0.0', 'CMD listens on all interfaces in the container');
  const help = spawnSync(process.execPath, [BIN, 'serve', '--help'], { encoding: 'utf8', timeout: 30000 });
  const flags = cmd.filter((a) => a.startsWith('--'));
  t.ok(
    help.status === 0 && flags.every((f) => help.stdout.includes(`${f} `)),
    `serve --help knows the CMD flags ${flags.join(' ')}`,
  );
  t.notOk(cmd.includes('--port'), 'the port comes from PJRT_SCORE_PORT/the default, as the manifest expects');
  const hc = find(finalStage, 'HEALTHCHECK').pop();
  t.ok(hc && /\/health/.test(hc.args), 'HEALTHCHECK probes /health');
  t.end();
});

// A real service for the probe paths and the HEALTHCHECK command.
// Keys on, as in the cluster: a key file like the Secret's.
const keyFile = path.join(require('node:os').tmpdir(), `pjrt-score-deploy-keys-${process.pid}`);
const PROBE_KEY = 'pk-deploy-probe-0123456789abcdef';

function startService() {
  fs.writeFileSync(keyFile, `# keys\n${PROBE_KEY}\n`);
  const serve = startServe([
    'serve',
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--warmup',
    'none',
    '--api-key-file',
    keyFile,
  ]);
  return { child: serve.child, port: serve.listening(), exited: serve.exited };
}

/** The liveness probe's httpGet, as the kubelet sends it: no key. */
async function liveness(base) {
  return (await fetch(`${base}${container.livenessProbe.httpGet.path}`).catch(() => null))?.status === 200;
}

function runHealthcheck(port) {
  const hc = find(finalStage, 'HEALTHCHECK').pop();
  const argv = execForm({ args: hc.args.slice(hc.args.indexOf('CMD') + 3).trim() });
  return spawnSync(argv[0] === 'node' ? process.execPath : argv[0], argv.slice(1), {
    encoding: 'utf8',
    timeout: 15000,
    env: { ...process.env, PJRT_SCORE_PORT: String(port) },
  });
}

// ---------------------------------------------------------------------------
// deploy/batch: run-batch as an Indexed Job, and the merge after it.

const batchJob = batchFiles.find((m) => m.file === 'job.yaml').doc;
const mergeJob = batchFiles.find((m) => m.file === 'merge-job.yaml').doc;
const batchPvc = batchFiles.find((m) => m.doc.kind === 'PersistentVolumeClaim').doc;
const batchContainer = batchJob.spec.template.spec.containers[0];
const batchEnv = (name) => (batchContainer.env || []).find((e) => e.name === name);

test('batch: an Indexed Job of run-batch shards, as the Deployment runs the service', (t) => {
  const [kust] = batchFiles.filter((m) => m.doc.kind === 'Kustomization').map((m) => m.doc);
  t.deepEqual(
    [...kust.resources].sort(),
    ['job.yaml', 'pvc.yaml'],
    'deploy/batch/kustomization.yaml: the PVC and the Job (the merge is applied after)',
  );
  t.equal(batchJob.spec.completionMode, 'Indexed', 'an Indexed Job');
  const shards = Number(batchEnv('SHARDS').value);
  t.ok(
    shards === batchJob.spec.completions && shards === batchJob.spec.parallelism,
    `SHARDS (${shards}) = completions = parallelism`,
  );
  t.equal(
    batchEnv('JOB_COMPLETION_INDEX').valueFrom.fieldRef.fieldPath,
    "metadata.annotations['batch.kubernetes.io/job-completion-index']",
    "the pod's index from its annotation",
  );
  t.equal(batchContainer.image, container.image, "the Deployment's image");
  t.deepEqual(batchContainer.resources, container.resources, "the Deployment's resources");
  t.deepEqual(batchContainer.securityContext, container.securityContext, "the Deployment's container security");
  const cache = (c) => c.volumeMounts.find((v) => v.name === 'compile-cache').mountPath;
  t.equal(cache(batchContainer), cache(container), 'the compile cache where the Deployment has it');
  for (const job of [batchJob, mergeJob]) {
    const claim = job.spec.template.spec.volumes.find((v) => v.persistentVolumeClaim);
    t.equal(claim.persistentVolumeClaim.claimName, batchPvc.metadata.name, `${job.metadata.name} mounts the PVC`);
  }
  const script = batchContainer.args.join(' ');
  const { MAX_FAILED_STATUS } = require('../dist/cli/run-batch');
  t.ok(
    script.includes(`-le ${MAX_FAILED_STATUS} ]`),
    `exits 1-${MAX_FAILED_STATUS} (lines failed, written with their status) count as done`,
  );
  const help = spawnSync(process.execPath, [BIN, 'run-batch', '--help'], { encoding: 'utf8' });
  for (const flag of script
    .match(/ --?[a-z][a-z-]*/g)
    .map((f) => f.trim())
    .filter((f) => !['-p', '-c', '-le'].includes(f))) {
    t.ok(help.stdout.includes(flag), `run-batch --help documents ${flag}`);
  }
  t.end();
});

test("batch: the Job's script over 3 indexes, then the merge's, answer every line once", (t) => {
  // The two scripts as the pods run them, with /data a directory here and pjrt-score this checkout's bin.
  const data = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'pjrt-batch-job-'));
  const localize = (text) =>
    text.replaceAll('/data', data).replaceAll('pjrt-score run-batch', `"${process.execPath}" "${BIN}" run-batch`);
  const lines = Array.from({ length: 7 }, (_, i) =>
    JSON.stringify({
      custom_id: `c${i}`,
      method: 'POST',
      url: i % 2 ? '/v1/rerank' : '/v1/score',
      body:
        i % 2
          ? { query: 'q', documents: [`doc ${i}`] }
          : { query: `q${i}`, items: [' a'], label_token_ids: [9805, 787] },
    }),
  );
  lines.push(JSON.stringify({ custom_id: 'bad', method: 'POST', url: '/v1/score', body: { query: 'q' } }));
  fs.writeFileSync(path.join(data, 'in.jsonl'), `${lines.join('\n')}\n`);
  const shards = Number(batchEnv('SHARDS').value);
  try {
    for (let index = 0; index < shards; index++) {
      const run = spawnSync('sh', ['-c', localize(batchContainer.args.join(' '))], {
        encoding: 'utf8',
        env: {
          ...process.env,
          JOB_COMPLETION_INDEX: String(index),
          SHARDS: String(shards),
          PJRT_SCORE_PRECISION: 'highest',
        },
        timeout: 600000,
      });
      t.equal(
        run.status,
        0,
        `index ${index}: the pod's script exits 0${run.status ? `: ${run.stderr.slice(-500)}` : ''}`,
      );
    }
    const merge = spawnSync('sh', ['-c', localize(mergeJob.spec.template.spec.containers[0].args.join(' '))], {
      encoding: 'utf8',
    });
    t.equal(merge.status, 0, 'the merge exits 0');
    const merged = fs
      .readFileSync(path.join(data, 'out.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    t.deepEqual(
      merged.map((l) => l.custom_id).sort(),
      [...lines.map((l) => JSON.parse(l).custom_id)].sort(),
      'out.jsonl answers every custom_id once',
    );
    t.equal(merged.find((l) => l.custom_id === 'bad').response.status_code, 400, 'the bad line with its 400');
  } finally {
    fs.rmSync(data, { recursive: true, force: true });
  }
  t.end();
});

test('the probe paths and the image HEALTHCHECK against a running service', async (t) => {
  const svc = startService();
  try {
    const port = await svc.port;
    const base = `http://127.0.0.1:${port}`;
    let ready = false;
    for (let i = 0; i < 240 && !ready; i++) {
      const r = await fetch(`${base}${container.readinessProbe.httpGet.path}`).catch(() => null);
      ready = r !== null && r.status === 200;
      if (!ready) await new Promise((resolve) => setTimeout(resolve, 500));
    }
    t.ok(ready, `readiness path ${container.readinessProbe.httpGet.path} turns 200 once loaded`);
    t.ok(await liveness(base), 'the liveness probe succeeds against the service with keys on, without a key');
    t.equal((await fetch(`${base}/v1/models`)).status, 401, 'while /v1/models without the key is 401');
    const hc = runHealthcheck(port);
    t.equal(
      hc.status,
      0,
      `the HEALTHCHECK command exits 0 against the ready service${hc.status ? `: ${hc.stderr}` : ''}`,
    );
  } finally {
    svc.child.kill('SIGTERM');
    let timer;
    const exit = await Promise.race([
      svc.exited,
      new Promise((resolve) => (timer = setTimeout(() => resolve(null), 30000))),
    ]);
    clearTimeout(timer);
    if (exit === null) svc.child.kill('SIGKILL');
    t.deepEqual(exit, { code: 0, signal: null }, 'the service exits 0 on SIGTERM');
  }
  // Nothing listens there any more: the same command reports unhealthy.
  const down = runHealthcheck(await svc.port);
  t.equal(down.status, 1, 'the HEALTHCHECK command exits 1 when nothing answers');
  t.notOk(await liveness(`http://127.0.0.1:${await svc.port}`), 'the liveness probe fails when nothing answers');
  fs.rmSync(keyFile, { force: true });
  t.end();
});
