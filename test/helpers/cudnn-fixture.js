'use strict';
// JAX 0.11.2's lowering of jax.nn.dot_product_attention(implementation='cudnn')
// (test/fixtures/jax-cudnn-0.11.2.txt, written by
// `python3.12 scripts/lab/gpu/jax_cudnn_reference.py --install > test/fixtures/jax-cudnn-0.11.2.txt`)
// and a parser for one custom-call line, JAX's pretty form or the builder's generic form.
const fs = require('node:fs');
const path = require('node:path');

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'jax-cudnn-0.11.2.txt');

/** The fields of one custom-call line: target, api version, backend_config (text and parsed), layouts, types. */
function parseCall(line) {
  const target = /custom_call @([^(]+)\(|call_target_name = "([^"]+)"/.exec(line);
  const config = /backend_config = "((?:[^"\\]|\\.)*)"/.exec(line)[1].replace(/\\22/g, '"').replace(/\\5C/g, '\\');
  const types = / : \(([^)]*)\) -> \(([^)]*)\)$/.exec(line);
  return {
    target: target[1] ?? target[2],
    apiVersion: /api_version = (\d+) : i32/.exec(line)[1],
    configText: config,
    config: JSON.parse(config),
    operandLayouts: /operand_layouts = (\[.*?\])(?:, result_layouts|\})/.exec(line)[1],
    resultLayouts: /result_layouts = (\[.*?\])\}/.exec(line)[1],
    operandTypes: types[1].split(', '),
    resultTypes: types[2].split(', '),
  };
}

/** The fixture's cases: { name, withStats, b, tq, hq, d, tk, hkv, mask, line }. */
function fixtureCases() {
  const lines = fs.readFileSync(FIXTURE, 'utf8').split('\n');
  const cases = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^## (\S+) (forward|training) q=(\d+)x(\d+)x(\d+)x(\d+) kv=\d+x(\d+)x(\d+)x\d+ mask=(\w+)$/.exec(
      lines[i],
    );
    if (!m) continue;
    const [, name, form, b, tq, hq, d, tk, hkv, mask] = m;
    cases.push({
      name: `${name} ${form}`,
      withStats: form === 'training',
      b: +b,
      tq: +tq,
      hq: +hq,
      d: +d,
      tk: +tk,
      hkv: +hkv,
      mask,
      line: lines[i + 1],
    });
  }
  return cases;
}

module.exports = { FIXTURE, parseCall, fixtureCases };
