'use strict';
// README.md's performance table is bench-results/shapes.json: regenerated
// here (what `npm run docs:performance` writes), the block between the
// markers must equal the file; and, read back from the README as a reader
// sees it, every figure of the table is the JSON's figure to the digits shown.
const test = require('tape');
const fs = require('node:fs');
const { DOC, START, END, SHAPES, benchJson, render } = require('../scripts/build/docs-performance.js');

const text = fs.readFileSync(DOC, 'utf8');
const shapes = JSON.parse(fs.readFileSync(SHAPES, 'utf8'));

test('README.md holds the performance table bench-results/shapes.json gives (npm run docs:performance)', (t) => {
  t.ok(text.indexOf(START) >= 0 && text.indexOf(END) > text.indexOf(START), 'README.md has the markers');
  t.ok(render(text) === text, 'regenerating the table changes nothing (else run npm run docs:performance)');
  t.end();
});

test("the README's table, read back, is the JSON's figures", (t) => {
  const block = text.slice(text.indexOf(START), text.indexOf(END));
  const rows = block.split('\n').filter((l) => /^\| [^-]/.test(l) && !l.startsWith('| workload'));
  const workloads = [...new Set(shapes.rows.map((r) => r.workload))];
  t.equal(rows.length, workloads.length, `${workloads.length} workloads, one line each`);
  // A figure shown with d decimals is the JSON's within half a unit of its last digit.
  const near = (shown, value, label) => {
    const digits = (shown.split('.')[1] ?? '').length;
    t.ok(Math.abs(Number(shown) - value) <= 0.5 * 10 ** -digits + 1e-12, `${label}: ${shown} is ${value}`);
  };
  const numbers = (cell) =>
    cell
      .replace(/\*\*/g, '')
      .split(' / ')
      .map((s) => s.replace(/[x%]$/, ''));
  workloads.forEach((name, i) => {
    const cells = rows[i].split(' | ').map((c) => c.replace(/^\| /, '').replace(/ \|$/, ''));
    const a = shapes.rows.find((r) => r.workload === name && r.asked === 'auto');
    const h = shapes.rows.find((r) => r.workload === name && r.asked === 'highest');
    const [ours, llama, xLlama, torch, xTorch, roof] = cells.slice(1).map(numbers);
    near(ours[0], a.seconds, `${name} auto s`);
    near(ours[1], h.seconds, `${name} highest s`);
    near(llama[0], a.llamaCppSeconds, `${name} node-llama-cpp s`);
    near(xLlama[0], a.ratioToLlamaCpp, `${name} auto x node-llama-cpp`);
    near(xLlama[1], h.ratioToLlamaCpp, `${name} highest x node-llama-cpp`);
    near(torch[0], a.torchSeconds, `${name} PyTorch bf16 s`);
    near(torch[1], h.torchSeconds, `${name} PyTorch f32 s`);
    near(xTorch[0], a.ratioToTorch, `${name} auto x PyTorch`);
    near(xTorch[1], h.ratioToTorch, `${name} highest x PyTorch`);
    near(roof[0], 100 * a.roofFraction, `${name} auto of roof %`);
    near(roof[1], 100 * h.roofFraction, `${name} highest of roof %`);
  });
  t.end();
});

test('shapes.json and runtime.json are one run, and the README names its machine from it', (t) => {
  const { runtime } = benchJson();
  t.equal(runtime.roofGflops, shapes.roofs.f32, "runtime.json's f32 roof is the shapes run's");
  const block = text.slice(text.indexOf(START), text.indexOf(END)).replace(/\s+/g, ' ');
  const m = shapes.machine;
  for (const fact of [
    m.cpuGeneration,
    m.cpuFlags.join(', '),
    `${m.cores} cores`,
    `${m.memoryGiB} GiB`,
    `Node ${m.node}`,
    m.date.slice(0, 10),
    shapes.command,
  ]) {
    t.ok(block.includes(fact), `the machine line says ${fact}`);
  }
  t.end();
});
