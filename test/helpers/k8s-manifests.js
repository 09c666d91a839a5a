'use strict';
/**
 * Kubernetes manifests read and checked by other people's tools:
 *   - YAML by the `yaml` package (YAML 1.2, strict, duplicate keys refused);
 *   - each object against the official OpenAPI schema of its kind, as the
 *     `kubernetes-models` package compiles it (types, enums, required
 *     fields, quantities), and KEDA's ScaledObject against KEDA's CRD schema
 *     (`@kubernetes-models/keda`);
 *   - unknown fields (a misspelt probe), which those schemas allow, by the
 *     TypeScript compiler against the same packages' types: every manifest
 *     becomes an object literal of its kind's interface, and an excess
 *     property is an error naming the field.
 * Kustomization files are not Kubernetes API objects: no schema checks them.
 *
 *   parseManifests(text, file) -> [objects]   (throws on a YAML error or warning)
 *   schemaProblems(object) -> Promise<[string]>
 *   typeProblems([{ name, object }]) -> [string]   (one tsc run)
 *   MODELS
 */
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const YAML = require('yaml');

const root = path.join(__dirname, '..', '..');

/** apiVersion/kind -> the module that models it, and its class and interface names. */
const MODELS = {
  'apps/v1/Deployment': { module: 'kubernetes-models/apps/v1/Deployment', name: 'Deployment' },
  'v1/Service': { module: 'kubernetes-models/v1/Service', name: 'Service' },
  'autoscaling/v2/HorizontalPodAutoscaler': {
    module: 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler',
    name: 'HorizontalPodAutoscaler',
  },
  'policy/v1/PodDisruptionBudget': {
    module: 'kubernetes-models/policy/v1/PodDisruptionBudget',
    name: 'PodDisruptionBudget',
  },
  'batch/v1/Job': { module: 'kubernetes-models/batch/v1/Job', name: 'Job' },
  'v1/PersistentVolumeClaim': { module: 'kubernetes-models/v1/PersistentVolumeClaim', name: 'PersistentVolumeClaim' },
  'keda.sh/v1alpha1/ScaledObject': {
    module: '@kubernetes-models/keda/keda.sh/v1alpha1/ScaledObject',
    name: 'ScaledObject',
  },
};

const modelKey = (object) => `${object?.apiVersion}/${object?.kind}`;

function parseManifests(text, file) {
  const docs = YAML.parseAllDocuments(text, { version: '1.2', strict: true, uniqueKeys: true, prettyErrors: true });
  const out = [];
  for (const doc of docs) {
    const trouble = [...doc.errors, ...doc.warnings];
    if (trouble.length > 0) throw new Error(`${file}: ${trouble.map((e) => e.message).join('; ')}`);
    const value = doc.toJS();
    if (value !== null) out.push(value);
  }
  return out;
}

/** The schema's complaints about `object` (none: []); an object of a kind no schema here knows is one. */
async function schemaProblems(object) {
  const model = MODELS[modelKey(object)];
  if (!model) return [`${modelKey(object)}: no schema for this kind here`];
  const Class = (await import(model.module))[model.name];
  try {
    new Class(object).validate();
    return [];
  } catch (error) {
    return [String(error.message)];
  }
}

/** tsc's excess-property and type errors for `entries` ({ name, object }), each "name: message". */
function typeProblems(entries) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-k8s-'));
  try {
    const lines = [];
    const names = [];
    entries.forEach(({ name, object }, i) => {
      const model = MODELS[modelKey(object)];
      if (!model) throw new Error(`${name}: no types for ${modelKey(object)}`);
      lines.push(`import type { I${model.name} as T${i} } from ${JSON.stringify(model.module)};`);
      names.push(name);
    });
    entries.forEach(({ object }, i) =>
      lines.push(`// @entry ${i}`, `export const m${i}: T${i} = ${JSON.stringify(object, null, 1)};`),
    );
    fs.writeFileSync(path.join(dir, 'manifests.ts'), `${lines.join('\n')}\n`);
    const nodeModules = path.join(root, 'node_modules');
    fs.writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          noEmit: true,
          module: 'esnext',
          moduleResolution: 'bundler',
          target: 'es2022',
          skipLibCheck: true,
          types: [],
          baseUrl: '.',
          paths: { '*': [`${nodeModules}/*`] },
        },
        files: ['manifests.ts'],
      }),
    );
    const tsc = path.join(nodeModules, 'typescript', 'bin', 'tsc');
    const run = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.json', '--pretty', 'false'], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 120_000,
    });
    if (run.error) throw run.error;
    if (run.status === 0) return [];
    // Name each error by the entry whose literal holds its line.
    const source = fs.readFileSync(path.join(dir, 'manifests.ts'), 'utf8').split('\n');
    const entryAt = (line) => {
      for (let l = line - 1; l >= 0; l--) {
        const m = /^\/\/ @entry (\d+)$/.exec(source[l]);
        if (m) return names[Number(m[1])];
      }
      return 'imports';
    };
    const problems = (run.stdout + run.stderr)
      .split('\n')
      .map((l) => /^manifests\.ts\((\d+),\d+\): error (TS\d+: .*)$/.exec(l))
      .filter(Boolean)
      .map((m) => `${entryAt(Number(m[1]))}: ${m[2]}`);
    return problems.length > 0 ? problems : [`tsc failed: ${(run.stdout + run.stderr).slice(0, 2000)}`];
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

module.exports = { MODELS, parseManifests, schemaProblems, typeProblems };
