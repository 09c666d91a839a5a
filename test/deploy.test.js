'use strict';
// deploy/: the Dockerfile and the Kubernetes manifests agree with each other
// and with the service. No kubectl or Docker here, so: a small YAML parser
// (the subset the manifests use; anything else is an error), a field check
// against the Kubernetes API types the manifests use (kubeconform-style: an
// unknown or mistyped field fails), and the probe paths and the image's
// HEALTHCHECK command run against a real `pjrt-score serve` on 127.0.0.1.
const test = require('tape');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');

const root = path.join(__dirname, '..');
const deployDir = path.join(root, 'deploy');
const k8sDir = path.join(deployDir, 'k8s');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const BIN = path.join(root, 'bin', 'pjrt-score.js');
const { DEFAULT_SERVE_OPTIONS } = require('../dist/server'); // the service's defaults, as pjrt-score/server exports them

// ---------------------------------------------------------------------------
// YAML, the subset: block mappings and sequences, plain/quoted scalars, flow
// sequences of scalars, comments, `---` documents. Anchors, tags, block
// scalars, flow mappings and YAML 1.1 booleans (yes/no/on/off) are refused,
// so what this reads is what any Kubernetes client reads.

class YamlSubsetError extends Error {}

function stripComment(text, lineNo) {
  let quote = null;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '#' && (i === 0 || /\s/.test(text[i - 1]))) return text.slice(0, i).trimEnd();
  }
  if (quote) throw new YamlSubsetError(`line ${lineNo}: unterminated ${quote} string`);
  return text.trimEnd();
}

function splitFlow(inner, lineNo) {
  const parts = [];
  let quote = null;
  let start = 0;
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i];
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = null;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '[' || c === '{') throw new YamlSubsetError(`line ${lineNo}: nested flow collections are outside the subset`);
    else if (c === ',') {
      parts.push(inner.slice(start, i).trim());
      start = i + 1;
    }
  }
  const last = inner.slice(start).trim();
  if (last !== '' || parts.length > 0) parts.push(last);
  return parts;
}

function scalar(raw, lineNo) {
  const text = raw.trim();
  if (text.startsWith('"')) {
    if (!text.endsWith('"') || text.length < 2) throw new YamlSubsetError(`line ${lineNo}: bad double-quoted string ${text}`);
    return JSON.parse(text);
  }
  if (text.startsWith("'")) {
    if (!text.endsWith("'") || text.length < 2) throw new YamlSubsetError(`line ${lineNo}: bad single-quoted string ${text}`);
    return text.slice(1, -1).replace(/''/g, "'");
  }
  if (text.startsWith('[')) {
    if (!text.endsWith(']')) throw new YamlSubsetError(`line ${lineNo}: unterminated flow sequence`);
    return splitFlow(text.slice(1, -1), lineNo).map((p) => scalar(p, lineNo));
  }
  if (/^[&*!|>{?%@`]/.test(text)) throw new YamlSubsetError(`line ${lineNo}: "${text}" is outside the YAML subset (anchors, tags, block scalars, flow mappings)`);
  if (/^(yes|no|on|off|y|n)$/i.test(text)) throw new YamlSubsetError(`line ${lineNo}: "${text}" is a boolean to some YAML parsers and a string to others: quote it or use true/false`);
  if (text === 'true' || text === 'false') return text === 'true';
  if (text === 'null' || text === '~' || text === '') return null;
  if (/^-?(0|[1-9]\d*)$/.test(text)) return Number(text);
  if (/^-?(0|[1-9]\d*)\.\d+$/.test(text)) return Number(text);
  return text;
}

function parseYamlDocuments(source) {
  const docs = [[]];
  source.split('\n').forEach((line, i) => {
    const lineNo = i + 1;
    if (/^---\s*$/.test(line)) return docs.push([]);
    if (/^\t| \t/.test(line.match(/^\s*/)[0])) throw new YamlSubsetError(`line ${lineNo}: tab in indentation`);
    const text = stripComment(line, lineNo);
    if (text.trim() === '') return undefined;
    const indent = text.length - text.trimStart().length;
    docs[docs.length - 1].push({ indent, text: text.trim(), lineNo });
    return undefined;
  });
  return docs.filter((lines) => lines.length > 0).map(parseDocument);
}

function parseDocument(lines) {
  let pos = 0;
  const isItem = (l) => l.text === '-' || l.text.startsWith('- ');
  const keyValue = (l) => /^("[^"]*"|'[^']*'|[^\s"'#][^:]*?):(?:\s+(.*))?$/.exec(l.text);

  function block(indent) {
    const line = lines[pos];
    return isItem(line) ? sequence(indent) : mapping(indent);
  }

  function sequence(indent) {
    const out = [];
    while (pos < lines.length && lines[pos].indent === indent && isItem(lines[pos])) {
      const line = lines[pos];
      const rest = line.text === '-' ? '' : line.text.slice(2);
      const restIndent = indent + (line.text.length - line.text.slice(1).trimStart().length);
      if (rest === '') {
        pos++;
        if (pos >= lines.length || lines[pos].indent <= indent) throw new YamlSubsetError(`line ${line.lineNo}: empty sequence item`);
        out.push(block(lines[pos].indent));
      } else if (keyValue({ text: rest }) && !/^["'[]/.test(rest)) {
        // "- key: value": a mapping whose first key sits after the dash.
        lines[pos] = { indent: restIndent, text: rest, lineNo: line.lineNo };
        out.push(mapping(restIndent));
      } else {
        out.push(scalar(rest, line.lineNo));
        pos++;
      }
    }
    return out;
  }

  function mapping(indent) {
    const out = {};
    while (pos < lines.length && lines[pos].indent === indent && !isItem(lines[pos])) {
      const line = lines[pos];
      const m = keyValue(line);
      if (!m) throw new YamlSubsetError(`line ${line.lineNo}: expected "key: value", got "${line.text}"`);
      const key = scalar(m[1], line.lineNo);
      if (Object.prototype.hasOwnProperty.call(out, key)) throw new YamlSubsetError(`line ${line.lineNo}: duplicate key "${key}"`);
      pos++;
      if (m[2] !== undefined && m[2] !== '') out[key] = scalar(m[2], line.lineNo);
      else if (pos < lines.length && lines[pos].indent > indent) out[key] = block(lines[pos].indent);
      else if (pos < lines.length && lines[pos].indent === indent && isItem(lines[pos])) out[key] = sequence(indent);
      else out[key] = null;
    }
    if (pos < lines.length && lines[pos].indent > indent) throw new YamlSubsetError(`line ${lines[pos].lineNo}: unexpected indentation`);
    return out;
  }

  const value = block(lines[0].indent);
  if (pos < lines.length) throw new YamlSubsetError(`line ${lines[pos].lineNo}: unexpected "${lines[pos].text}" (indentation?)`);
  return value;
}

// ---------------------------------------------------------------------------
// The Kubernetes API types the manifests use, field by field (names and value
// kinds as in the API reference). A field not listed is a typo or something
// this check does not know yet: both fail.

const QUANTITY = /^(\d+(\.\d+)?|\.\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const PRIMITIVE = {
  string: (v) => typeof v === 'string',
  int: (v) => Number.isInteger(v),
  bool: (v) => typeof v === 'boolean',
  intOrString: (v) => Number.isInteger(v) || (typeof v === 'string' && v !== ''),
  quantity: (v) => (typeof v === 'string' && QUANTITY.test(v)) || (Number.isFinite(v) && v >= 0),
  labels: (v) => v && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string' && x.length <= 63),
  quantities: (v) => v && typeof v === 'object' && Object.entries(v).every(([k, q]) => /^(cpu|memory|ephemeral-storage)$/.test(k) && PRIMITIVE.quantity(q)),
};
const meta = { apiVersion: 'string', kind: 'string', metadata: 'ObjectMeta' };
const TYPES = {
  ObjectMeta: { name: 'string', namespace: 'string', labels: 'labels', annotations: 'labels' },
  Deployment: { ...meta, spec: 'DeploymentSpec' },
  DeploymentSpec: {
    replicas: 'int',
    selector: 'LabelSelector',
    strategy: 'DeploymentStrategy',
    template: 'PodTemplateSpec',
    minReadySeconds: 'int',
    revisionHistoryLimit: 'int',
    progressDeadlineSeconds: 'int',
  },
  LabelSelector: { matchLabels: 'labels' },
  DeploymentStrategy: { type: ['Recreate', 'RollingUpdate'], rollingUpdate: 'RollingUpdateDeployment' },
  RollingUpdateDeployment: { maxUnavailable: 'intOrString', maxSurge: 'intOrString' },
  PodTemplateSpec: { metadata: 'ObjectMeta', spec: 'PodSpec' },
  PodSpec: {
    containers: ['Container'],
    initContainers: ['Container'],
    volumes: ['Volume'],
    securityContext: 'PodSecurityContext',
    terminationGracePeriodSeconds: 'int',
    serviceAccountName: 'string',
    nodeSelector: 'labels',
  },
  PodSecurityContext: { runAsNonRoot: 'bool', runAsUser: 'int', runAsGroup: 'int', fsGroup: 'int', seccompProfile: 'SeccompProfile' },
  SeccompProfile: { type: ['RuntimeDefault', 'Localhost', 'Unconfined'], localhostProfile: 'string' },
  Container: {
    name: 'string',
    image: 'string',
    imagePullPolicy: ['Always', 'IfNotPresent', 'Never'],
    command: ['string'],
    args: ['string'],
    workingDir: 'string',
    ports: ['ContainerPort'],
    env: ['EnvVar'],
    resources: 'ResourceRequirements',
    startupProbe: 'Probe',
    readinessProbe: 'Probe',
    livenessProbe: 'Probe',
    lifecycle: 'Lifecycle',
    securityContext: 'SecurityContext',
    volumeMounts: ['VolumeMount'],
  },
  ContainerPort: { name: 'string', containerPort: 'int', protocol: ['TCP', 'UDP', 'SCTP'] },
  EnvVar: { name: 'string', value: 'string' },
  ResourceRequirements: { requests: 'quantities', limits: 'quantities' },
  Probe: {
    httpGet: 'HTTPGetAction',
    tcpSocket: 'TCPSocketAction',
    exec: 'ExecAction',
    initialDelaySeconds: 'int',
    periodSeconds: 'int',
    timeoutSeconds: 'int',
    successThreshold: 'int',
    failureThreshold: 'int',
  },
  HTTPGetAction: { path: 'string', port: 'intOrString', scheme: ['HTTP', 'HTTPS'] },
  TCPSocketAction: { port: 'intOrString' },
  ExecAction: { command: ['string'] },
  Lifecycle: { preStop: 'LifecycleHandler', postStart: 'LifecycleHandler' },
  LifecycleHandler: { exec: 'ExecAction', httpGet: 'HTTPGetAction' },
  SecurityContext: {
    allowPrivilegeEscalation: 'bool',
    readOnlyRootFilesystem: 'bool',
    runAsNonRoot: 'bool',
    runAsUser: 'int',
    capabilities: 'Capabilities',
  },
  Capabilities: { add: ['string'], drop: ['string'] },
  VolumeMount: { name: 'string', mountPath: 'string', readOnly: 'bool', subPath: 'string' },
  Volume: { name: 'string', emptyDir: 'EmptyDirVolumeSource', secret: 'SecretVolumeSource' },
  SecretVolumeSource: { secretName: 'string', defaultMode: 'int', optional: 'bool' },
  EmptyDirVolumeSource: { medium: ['', 'Memory'], sizeLimit: 'quantity' },
  Service: { ...meta, spec: 'ServiceSpec' },
  ServiceSpec: { type: ['ClusterIP', 'NodePort', 'LoadBalancer'], selector: 'labels', ports: ['ServicePort'] },
  ServicePort: { name: 'string', port: 'int', targetPort: 'intOrString', protocol: ['TCP', 'UDP', 'SCTP'] },
  HorizontalPodAutoscaler: { ...meta, spec: 'HorizontalPodAutoscalerSpec' },
  HorizontalPodAutoscalerSpec: {
    scaleTargetRef: 'CrossVersionObjectReference',
    minReplicas: 'int',
    maxReplicas: 'int',
    metrics: ['MetricSpec'],
    behavior: 'HorizontalPodAutoscalerBehavior',
  },
  CrossVersionObjectReference: { apiVersion: 'string', kind: 'string', name: 'string' },
  MetricSpec: { type: ['Resource'], resource: 'ResourceMetricSource' },
  ResourceMetricSource: { name: ['cpu', 'memory'], target: 'MetricTarget' },
  MetricTarget: { type: ['Utilization', 'AverageValue', 'Value'], averageUtilization: 'int', averageValue: 'quantity', value: 'quantity' },
  HorizontalPodAutoscalerBehavior: { scaleUp: 'HPAScalingRules', scaleDown: 'HPAScalingRules' },
  HPAScalingRules: { stabilizationWindowSeconds: 'int', selectPolicy: ['Max', 'Min', 'Disabled'] },
  PodDisruptionBudget: { ...meta, spec: 'PodDisruptionBudgetSpec' },
  PodDisruptionBudgetSpec: { minAvailable: 'intOrString', maxUnavailable: 'intOrString', selector: 'LabelSelector' },
  Kustomization: { apiVersion: 'string', kind: 'string', resources: ['string'], namespace: 'string' },
};
const API_VERSIONS = {
  Deployment: 'apps/v1',
  Service: 'v1',
  HorizontalPodAutoscaler: 'autoscaling/v2',
  PodDisruptionBudget: 'policy/v1',
  Kustomization: 'kustomize.config.k8s.io/v1beta1',
};
const REQUIRED = {
  Container: ['name', 'image'],
  ContainerPort: ['containerPort'],
  EnvVar: ['name'],
  ServicePort: ['port'],
  HTTPGetAction: ['port'],
  VolumeMount: ['name', 'mountPath'],
  Volume: ['name'],
  HorizontalPodAutoscalerSpec: ['scaleTargetRef', 'maxReplicas'],
  CrossVersionObjectReference: ['kind', 'name'],
  DeploymentSpec: ['selector', 'template'],
  PodSpec: ['containers'],
};

/** Problems with `value` as a `type`, each "path: what". */
function checkType(value, type, where) {
  if (Array.isArray(type)) {
    if (typeof type[0] === 'string' && !TYPES[type[0]] && !PRIMITIVE[type[0]]) {
      return type.includes(value) ? [] : [`${where}: ${JSON.stringify(value)} is not one of ${type.join(', ')}`];
    }
    if (!Array.isArray(value)) return [`${where}: expected a list`];
    return value.flatMap((v, i) => checkType(v, type[0], `${where}[${i}]`));
  }
  if (PRIMITIVE[type]) return PRIMITIVE[type](value) ? [] : [`${where}: ${JSON.stringify(value)} is not a valid ${type}`];
  const fields = TYPES[type];
  if (!value || typeof value !== 'object' || Array.isArray(value)) return [`${where}: expected a ${type} object`];
  const problems = [];
  for (const [k, v] of Object.entries(value)) {
    if (!fields[k]) problems.push(`${where}.${k}: unknown field of ${type}`);
    else problems.push(...checkType(v, fields[k], `${where}.${k}`));
  }
  for (const k of REQUIRED[type] || []) if (value[k] === undefined) problems.push(`${where}.${k}: required in ${type}`);
  return problems;
}

function validateObject(obj, file) {
  const where = `${file} ${obj && obj.kind}/${obj && obj.metadata ? obj.metadata.name : ''}`;
  if (!obj || !TYPES[obj.kind]) return [`${where}: unknown kind ${obj && obj.kind}`];
  const problems = checkType(obj, obj.kind, where);
  if (obj.apiVersion !== API_VERSIONS[obj.kind]) problems.push(`${where}: apiVersion ${obj.apiVersion}, expected ${API_VERSIONS[obj.kind]}`);
  if (obj.kind !== 'Kustomization' && !(obj.metadata && DNS_LABEL.test(obj.metadata.name || ''))) problems.push(`${where}: metadata.name must be a DNS label`);
  return problems;
}

// ---------------------------------------------------------------------------
// The Dockerfile: instructions with continuation lines joined, ARG defaults
// substituted, stages split at FROM.

const INSTRUCTIONS = new Set(['FROM', 'RUN', 'CMD', 'LABEL', 'EXPOSE', 'ENV', 'ADD', 'COPY', 'ENTRYPOINT', 'VOLUME', 'USER', 'WORKDIR', 'ARG', 'ONBUILD', 'STOPSIGNAL', 'HEALTHCHECK', 'SHELL']);

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
      instructions.push({ keyword: m ? m[1].toUpperCase() : current.text, args: m ? m[2] : '', lineNo: current.lineNo });
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
    if (ins.keyword === 'FROM') stages.push({ from: ins.args.replace(/\$\{(\w+)\}/g, (_, n) => args[n] ?? ''), instructions: [], env: {} });
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

const manifests = [];
for (const file of fs.readdirSync(k8sDir).filter((f) => /\.ya?ml$/.test(f)).sort()) {
  for (const doc of parseYamlDocuments(fs.readFileSync(path.join(k8sDir, file), 'utf8'))) manifests.push({ file, doc });
}
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

test('YAML subset parser: reads what it claims, refuses the rest', (t) => {
  const [doc] = parseYamlDocuments(
    ['a: 1', 'b: "x: y"  # comment', "c: 'it''s'", 'd:', '  - e: true', '    f: [1, "2", three]', '  - plain text', 'g:', '- 0.5', 'h: ~'].join('\n'),
  );
  t.deepEqual(doc, { a: 1, b: 'x: y', c: "it's", d: [{ e: true, f: [1, '2', 'three'] }, 'plain text'], g: [0.5], h: null });
  t.equal(parseYamlDocuments('a: 1\n---\nb: 2\n').length, 2, 'two documents');
  for (const [bad, why] of [
    ['a: &x 1', 'anchors'],
    ['a: |\n  text', 'block scalars'],
    ['a: {b: 1}', 'flow mappings'],
    ['a: yes', 'YAML 1.1 booleans'],
    ['a: 1\na: 2', 'duplicate keys'],
    ['a:\n\t- 1', 'tabs'],
    ['a: 1\n   b: 2', 'stray indentation'],
  ]) {
    t.throws(() => parseYamlDocuments(bad), YamlSubsetError, `refuses ${why}`);
  }
  t.end();
});

test('manifests: every field is a known Kubernetes field of the right kind', (t) => {
  t.ok(manifests.length >= 5, `read ${manifests.length} objects from deploy/k8s/*.yaml`);
  for (const { file, doc } of manifests) {
    t.deepEqual(validateObject(doc, file), [], `${file}: ${doc.kind} ${doc.metadata ? doc.metadata.name : ''} passes the field check`);
  }
  const broken = JSON.parse(JSON.stringify(deployment));
  broken.spec.template.spec.containers[0].readinesProbe = broken.spec.template.spec.containers[0].readinessProbe;
  broken.spec.template.spec.containers[0].env = [{ name: 'PORT', value: 30000 }];
  const problems = validateObject(broken, 'mutated');
  t.ok(problems.some((p) => p.includes('readinesProbe: unknown field')), 'the check catches a misspelt field');
  t.ok(problems.some((p) => p.includes('env[0].value')), 'and a non-string env value');
  t.deepEqual(
    [...kustomization.resources].sort(),
    manifests.filter((m) => m.doc.kind !== 'Kustomization').map((m) => m.file).filter((f, i, a) => a.indexOf(f) === i).sort(),
    'kustomization.yaml lists every manifest',
  );
  t.end();
});

test('Deployment, Service, PDB: labels, ports and image agree with the package and the service', (t) => {
  const podLabels = deployment.spec.template.metadata.labels;
  const selects = (selector) => Object.entries(selector).every(([k, v]) => podLabels[k] === v);
  t.ok(selects(deployment.spec.selector.matchLabels), 'the Deployment selects its own pods');
  t.ok(selects(service.spec.selector), 'the Service selects the pods');
  t.ok(selects(pdb.spec.selector.matchLabels), 'the PodDisruptionBudget selects the pods');
  t.equal(pod.containers.length, 1, 'one container');
  t.equal(container.image, `${pkg.name}:${pkg.version}`, `image ${pkg.name}:${pkg.version} (package.json version; README tells how to retag)`);

  const http = containerPort('http');
  t.ok(http, 'a container port named http');
  t.equal(http.containerPort, DEFAULT_SERVE_OPTIONS.port, `containerPort ${http.containerPort} is the service's default port`);
  if (envOf('PJRT_SCORE_PORT') !== undefined) t.equal(Number(envOf('PJRT_SCORE_PORT')), http.containerPort, 'PJRT_SCORE_PORT equals the containerPort');
  const [svcPort] = service.spec.ports;
  t.ok(containerPort(svcPort.targetPort), `Service targetPort ${svcPort.targetPort} is a container port`);
  t.equal(svcPort.port, DEFAULT_SERVE_OPTIONS.port, 'the Service listens on the same port as the service (SGLang clients keep their URL)');
  t.notOk(container.command, 'no command: the image ENTRYPOINT/CMD runs');
  if (container.args) t.deepEqual(container.args, execForm(find(finalStage, 'CMD')[0]), 'args, if set, equal the image CMD');
  t.end();
});

test('probes: readiness on /health, liveness and startup on routes the service answers', (t) => {
  for (const kind of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
    const probe = container[kind];
    // Liveness asks /v1/models, which needs an API key: an exec probe reads it from the mounted Secret.
    if (kind === 'livenessProbe' && probe && probe.exec) {
      t.ok(probe.exec.command[0] === 'node' && /\/v1\/models/.test(probe.exec.command.join(' ')), 'liveness: node asks /v1/models with the key file\'s first key');
      continue;
    }
    // tape's t.ok returns nothing: test the value itself.
    t.ok(probe && probe.httpGet, `${kind} is an httpGet probe`);
    if (!(probe && probe.httpGet)) continue;
    t.ok(containerPort(probe.httpGet.port), `${kind} targets container port ${probe.httpGet.port}`);
  }
  t.equal(container.readinessProbe.httpGet.path, '/health', 'readiness on /health (503 while loading or draining)');
  t.equal(container.startupProbe.httpGet.path, '/health', 'startup on /health');
  const startupBudget = container.startupProbe.periodSeconds * container.startupProbe.failureThreshold;
  t.ok(startupBudget >= 120, `the startup probe allows ${startupBudget} s for model load and warmup`);
  const liveBudget = container.livenessProbe.periodSeconds * container.livenessProbe.failureThreshold;
  t.ok(liveBudget >= 20, `liveness tolerates ${liveBudget} s of silence`);
  const preStop = pod.containers[0].lifecycle?.preStop?.exec?.command || [];
  const preStopSeconds = preStop[0] === 'sleep' ? Number(preStop[1]) : 0;
  const timeoutMs = Number(envOf('PJRT_SCORE_TIMEOUT_MS') || DEFAULT_SERVE_OPTIONS.timeoutMs);
  // lib/cli/serve.ts exits after the drain or after timeout + 15 s, whichever is first.
  const needed = preStopSeconds + timeoutMs / 1000 + 15;
  t.ok(pod.terminationGracePeriodSeconds >= needed, `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} >= preStop ${preStopSeconds} s + request timeout ${timeoutMs / 1000} s + drain guard 15 s`);
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
  t.ok(bytes(requests.memory) >= 1.5 * 2 ** 30, `memory request ${requests.memory} covers the measured working set (>= 1.5 GiB)`);
  t.ok(bytes(limits.memory) >= bytes(requests.memory) && bytes(limits.memory) >= 2.5 * 2 ** 30, `memory limit ${limits.memory} >= request and above the worst measured peak (1.98 GiB)`);

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
  t.ok(container.volumeMounts.every((m) => volumes.has(m.name)), 'every mount has its volume');
  t.end();
});

test('API keys come from a Secret mounted read-only, named by PJRT_SCORE_API_KEY_FILE', (t) => {
  const file = envOf('PJRT_SCORE_API_KEY_FILE');
  t.ok(file, `PJRT_SCORE_API_KEY_FILE is set (${file})`);
  const mount = container.volumeMounts.find((m) => file && file.startsWith(`${m.mountPath}/`));
  t.ok(mount && mount.readOnly === true, `the file is under a read-only mount (${mount && mount.mountPath})`);
  const volume = mount && pod.volumes.find((v) => v.name === mount.name);
  t.ok(volume && volume.secret && volume.secret.secretName, `that mount is the Secret ${volume && volume.secret && volume.secret.secretName}`);
  t.notOk(volume && volume.secret && volume.secret.optional, 'not optional: without the Secret the pod does not start');
  t.notOk((container.env || []).some((e) => e.name === 'PJRT_SCORE_API_KEY'), 'no key in the manifests themselves');
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
  t.ok(hpa.spec.minReplicas >= 1 && hpa.spec.minReplicas <= hpa.spec.maxReplicas, `replicas ${hpa.spec.minReplicas}..${hpa.spec.maxReplicas}`);
  t.ok(deployment.spec.replicas >= hpa.spec.minReplicas && deployment.spec.replicas <= hpa.spec.maxReplicas, 'the Deployment starts within the HPA range');
  t.ok(pdb.spec.minAvailable < hpa.spec.minReplicas, 'the PDB leaves room to drain a node at the minimum size');
  t.end();
});

test('Dockerfile: node:20-slim, tarball installed without scripts, fetch at build time, EXPOSE/CMD/HEALTHCHECK', (t) => {
  const unknown = dockerfile.filter((i) => !INSTRUCTIONS.has(i.keyword));
  t.deepEqual(unknown.map((i) => `line ${i.lineNo}: ${i.keyword}`), [], 'only Dockerfile instructions');
  t.ok(stages.every((s) => s.from.split(' ')[0] === 'node:20-slim'), `every stage FROM node:20-slim (${stages.map((s) => s.from).join('; ')})`);
  const tarball = `${pkg.name}-${pkg.version}.tgz`;
  t.equal(dockerArgs.TARBALL, tarball, `ARG TARBALL defaults to what npm pack makes (${tarball})`);
  const runs = stages.flatMap((s) => find(s, 'RUN')).map((i) => i.args);
  t.ok(runs.some((r) => /npm install\b[^&]*--ignore-scripts[^&]*\.tgz/.test(r)), 'RUN npm install --ignore-scripts <tarball>');
  t.ok(runs.some((r) => /pjrt-score fetch/.test(r)), 'RUN pjrt-score fetch at build time');
  t.ok(stages.every((s) => !find(s, 'ENV').length || s.env.PJRT_SCORE_CACHE === finalStage.env.PJRT_SCORE_CACHE), 'the same PJRT_SCORE_CACHE in the fetch stage and the final stage');
  const dockerignore = fs.readFileSync(path.join(deployDir, '.dockerignore'), 'utf8');
  t.ok(/^!pjrt-score-\*\.tgz$/m.test(dockerignore), '.dockerignore lets the tarball into the build context');

  const exposed = find(finalStage, 'EXPOSE').map((i) => Number(i.args.split('/')[0]));
  t.deepEqual(exposed, [DEFAULT_SERVE_OPTIONS.port], `EXPOSE ${exposed} is the service's default port`);
  t.equal(exposed[0], containerPort('http').containerPort, 'and the manifest containerPort');
  if (finalStage.env.PJRT_SCORE_PORT) t.equal(Number(finalStage.env.PJRT_SCORE_PORT), exposed[0], 'ENV PJRT_SCORE_PORT equals EXPOSE');

  const cmd = execForm(find(finalStage, 'CMD').pop());
  t.deepEqual(cmd.slice(0, 2), [Object.keys(pkg.bin)[0], 'serve'], `CMD runs ${Object.keys(pkg.bin)[0]} serve`);
  t.equal(cmd[cmd.indexOf('--host') + 1], '0.0.0.0', 'CMD listens on all interfaces in the container');
  const help = spawnSync(process.execPath, [BIN, 'serve', '--help'], { encoding: 'utf8', timeout: 30000 });
  const flags = cmd.filter((a) => a.startsWith('--'));
  t.ok(help.status === 0 && flags.every((f) => help.stdout.includes(`${f} `)), `serve --help knows the CMD flags ${flags.join(' ')}`);
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
  const child = spawn(process.execPath, [BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--warmup', 'none', '--api-key-file', keyFile], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr = (stderr + c).slice(-4000)));
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const port = new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        const e = JSON.parse(line);
        if (e.event === 'listening') resolve(e.port);
      } catch {
        // not a log line
      }
    });
    exited.then((e) => reject(new Error(`serve exited ${JSON.stringify(e)} before listening: ${stderr}`)));
  });
  return { child, port, exited, stderr: () => stderr };
}

/** The liveness probe: its httpGet path, or its exec command run with the container's key file variable. */
async function liveness(base, port) {
  const probe = container.livenessProbe;
  if (probe.httpGet) return (await fetch(`${base}${probe.httpGet.path}`)).status === 200;
  const [cmd, ...args] = probe.exec.command;
  const run = spawnSync(cmd === 'node' ? process.execPath : cmd, args, { encoding: 'utf8', timeout: 15000, env: { ...process.env, PJRT_SCORE_PORT: String(port), PJRT_SCORE_API_KEY_FILE: keyFile } });
  return run.status === 0;
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
    t.ok(await liveness(base, port), 'the liveness probe succeeds against the service with keys on');
    t.equal((await fetch(`${base}/v1/models`)).status, 401, 'and /v1/models without the key is 401 (the probe really sends it)');
    const hc = runHealthcheck(port);
    t.equal(hc.status, 0, `the HEALTHCHECK command exits 0 against the ready service${hc.status ? `: ${hc.stderr}` : ''}`);
  } finally {
    svc.child.kill('SIGTERM');
    let timer;
    const exit = await Promise.race([svc.exited, new Promise((resolve) => (timer = setTimeout(() => resolve(null), 30000)))]);
    clearTimeout(timer);
    if (exit === null) svc.child.kill('SIGKILL');
    t.deepEqual(exit, { code: 0, signal: null }, 'the service exits 0 on SIGTERM');
  }
  // Nothing listens there any more: the same command reports unhealthy.
  const down = runHealthcheck(await svc.port);
  t.equal(down.status, 1, 'the HEALTHCHECK command exits 1 when nothing answers');
  t.notOk(await liveness(`http://127.0.0.1:${await svc.port}`, await svc.port), 'the liveness probe fails when nothing answers');
  fs.rmSync(keyFile, { force: true });
  t.end();
});
