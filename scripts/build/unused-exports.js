'use strict';
// The exports of lib/ that nothing needs (docs/development.md, "Commands"):
// a name a file of lib/ exports is needed when another file of lib/ imports
// it (or re-exports it under a name that is needed), when it is reached from
// the package's entry points (lib/index.ts and every subpath of package.json
// "exports"), or when a file of test/, scripts/, fuzz/, bin/ or examples/
// names it (they reach dist/ by deep paths; any mention of the name counts,
// so this errs on keeping). Prints each unneeded export as file:line name,
// then the count; `--json` prints { count, exports }; `--check` exits 1 when
// there is any (npm run lint:exports). Read with TypeScript's own parser, no
// type check.
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');

const ROOT = path.join(__dirname, '..', '..');
const LIB = path.join(ROOT, 'lib');
const CONSUMERS = ['test', 'scripts', 'fuzz', 'bin', 'examples'];

function walk(dir, keep, out = []) {
  if (!fs.existsSync(dir)) return out;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'node_modules' && !e.name.startsWith('.')) walk(full, keep, out);
    } else if (keep(e.name)) out.push(full);
  }
  return out;
}

/** A relative module specifier of `from` -> the .ts file of lib/ it names, or null. */
function resolve(from, spec) {
  if (!spec.startsWith('.')) return null;
  const base = path.resolve(path.dirname(from), spec);
  for (const candidate of [`${base}.ts`, path.join(base, 'index.ts')]) if (fs.existsSync(candidate)) return candidate;
  return null;
}

/** Per file: its exports (name -> line), its uses of other files' names, its re-exports and `export *`s. */
function readFile(file) {
  const text = fs.readFileSync(file, 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const exports = new Map();
  const uses = []; // [target, name | '*']
  const reexports = []; // [target, name there, name here]
  const stars = []; // targets of `export * from`
  const line = (node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
  const isExported = (node) => (ts.getCombinedModifierFlags(node) & ts.ModifierFlags.Export) !== 0;
  const visitTypes = (node) => {
    // import('./x').Name and typeof import('./x') in types.
    if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      const target = resolve(file, node.argument.literal.text);
      if (target) uses.push([target, node.qualifier ? node.qualifier.getText(source).split('.')[0] : '*']);
    }
    ts.forEachChild(node, visitTypes);
  };
  for (const st of source.statements) {
    if (ts.isImportDeclaration(st) && ts.isStringLiteral(st.moduleSpecifier)) {
      const target = resolve(file, st.moduleSpecifier.text);
      const clause = st.importClause;
      if (!target || !clause) continue;
      if (clause.name) uses.push([target, 'default']);
      const bindings = clause.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) uses.push([target, '*']);
      else if (bindings) for (const el of bindings.elements) uses.push([target, (el.propertyName ?? el.name).text]);
    } else if (ts.isExportDeclaration(st)) {
      const target =
        st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier) ? resolve(file, st.moduleSpecifier.text) : null;
      if (!st.exportClause) {
        if (target) stars.push(target);
      } else if (ts.isNamespaceExport(st.exportClause)) {
        exports.set(st.exportClause.name.text, line(st));
        if (target) uses.push([target, '*']);
      } else {
        for (const el of st.exportClause.elements) {
          const here = el.name.text;
          const there = (el.propertyName ?? el.name).text;
          if (target) reexports.push([target, there, here]);
          else exports.set(here, { line: line(el), local: true });
        }
      }
    } else if (isExported(st)) {
      if (ts.isVariableStatement(st)) {
        for (const d of st.declarationList.declarations) if (ts.isIdentifier(d.name)) exports.set(d.name.text, line(d));
      } else if (st.name && ts.isIdentifier(st.name)) {
        exports.set(st.name.text, line(st));
      }
    }
    visitTypes(st);
  }
  // require('../x') of lib/ itself (a lazy load): every export of the target counts as used.
  for (const m of text.matchAll(/require\('(\.{1,2}\/[^']*)'\)/g)) {
    const target = resolve(file, m[1]);
    if (target) uses.push([target, '*']);
  }
  return { exports, uses, reexports, stars };
}

function unusedExports() {
  const files = walk(LIB, (n) => n.endsWith('.ts') && !n.endsWith('.d.ts'));
  const info = new Map(files.map((f) => [f, readFile(f)]));
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const entries = new Set([path.join(LIB, 'index.ts')]);
  for (const target of Object.values(pkg.exports)) {
    const js = typeof target === 'string' ? target : (target.default ?? target.require);
    const m = /^\.\/dist\/(.+)\.js$/.exec(js ?? '');
    if (m) entries.add(path.join(LIB, `${m[1]}.ts`));
  }
  // Every word the consumers outside lib/ write.
  const words = new Set();
  for (const dir of CONSUMERS) {
    for (const f of walk(path.join(ROOT, dir), (n) => /\.(c|m)?(js|ts)$/.test(n))) {
      for (const m of fs.readFileSync(f, 'utf8').matchAll(/[A-Za-z_$][\w$]*/g)) words.add(m[0]);
    }
  }
  // needed: "file\0name"; grown from the roots until nothing changes.
  const needed = new Set();
  const key = (f, n) => `${f}\0${n}`;
  const allNames = (f) => {
    const i = info.get(f);
    const names = new Set([...i.exports.keys(), ...i.reexports.map((r) => r[2])]);
    for (const s of i.stars) for (const n of allNames(s)) names.add(n);
    return names;
  };
  const mark = (f, n) => {
    if (!info.has(f)) return;
    if (n === '*') {
      for (const name of allNames(f)) mark(f, name);
      return;
    }
    if (needed.has(key(f, n))) return;
    needed.add(key(f, n));
    const i = info.get(f);
    for (const [target, there, here] of i.reexports) if (here === n) mark(target, there);
    for (const s of i.stars) if (allNames(s).has(n)) mark(s, n);
  };
  for (const e of entries) mark(e, '*');
  for (const [, i] of info) for (const [target, name] of i.uses) mark(target, name);
  for (const [f] of info) for (const name of allNames(f)) if (words.has(name)) mark(f, name);
  const out = [];
  for (const [f, i] of info) {
    for (const [name, where] of i.exports) {
      if (needed.has(key(f, name))) continue;
      const lineNo = typeof where === 'number' ? where : where.line;
      out.push({ file: path.relative(ROOT, f), line: lineNo, name });
    }
    for (const [, , here] of i.reexports)
      if (!needed.has(key(f, here))) out.push({ file: path.relative(ROOT, f), line: 0, name: here, reexport: true });
  }
  return out.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}

if (require.main === module) {
  const list = unusedExports();
  if (process.argv.includes('--json')) {
    process.stdout.write(`${JSON.stringify({ count: list.length, exports: list }, null, 2)}\n`);
  } else {
    for (const e of list) process.stdout.write(`${e.file}:${e.line} ${e.name}${e.reexport ? ' (re-export)' : ''}\n`);
    process.stdout.write(`${list.length} exports of lib/ that nothing needs\n`);
  }
  if (process.argv.includes('--check') && list.length > 0) process.exitCode = 1;
}

module.exports = { unusedExports };
