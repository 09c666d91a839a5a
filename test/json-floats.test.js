'use strict';
// The float-key JSON writer (lib/server/http/json-floats.ts): the same value as
// JSON.stringify once parsed, and every number under a named key written
// with a fraction part or an exponent, so Python's json reads a float.
const test = require('tape');
const { stringifyWithFloats } = require('../dist/server/http/json-floats');
const { prng } = require('./helpers/prng');

test('parses back to what JSON.stringify gives; floats keep a fraction part', (t) => {
  const rand = prng(33).next;
  const values = [0, 1, -1, 2, 1e21, -0, 0.5, 1e-7, 123456789, Number.MAX_SAFE_INTEGER, NaN, Infinity];
  for (let n = 0; n < 200; n++)
    values.push(rand() < 0.3 ? Math.round(rand() * 10) : (rand() - 0.5) * 10 ** Math.round(rand() * 10));
  const body = {
    scores: [values.slice(0, 6), values.slice(6)],
    usage: { prompt_tokens: 12, total_tokens: 12 },
    model: 'm "q"',
    nested: { score: 3, flag: true, none: null, skip: undefined },
  };
  const text = stringifyWithFloats(body, new Set(['scores', 'score']));
  t.deepEqual(JSON.parse(text), JSON.parse(JSON.stringify(body)), 'the same value');
  const scores = text.slice(text.indexOf('"scores":'), text.indexOf('"usage":'));
  const numbers = scores.match(/-?[0-9][0-9.eE+-]*/g);
  t.equal(numbers.length, values.filter(Number.isFinite).length, 'every finite score written (non-finite as null)');
  t.ok(
    numbers.every((x) => /[.eE]/.test(x)),
    'each with a fraction part or an exponent',
  );
  t.ok(text.includes('"score":3.0'), 'a nested float key');
  t.ok(text.includes('"prompt_tokens":12,'), 'other numbers stay integers');
  t.end();
});
