'use strict';
// docs/configuration.md's options table is the settings rows: regenerated
// here from dist/ (what `npm run docs:options` writes), it must equal the
// file; and each variable is written once in that document, in the table of
// rows or in the hand-written table beside it, never in both.
const test = require('tape');
const fs = require('node:fs');
const { DOC, START, END, render } = require('../scripts/build/docs-options.js');
const { SERVE_SETTINGS } = require('../dist/server/settings/serve-settings.js');

const text = fs.readFileSync(DOC, 'utf8');

test('docs/configuration.md holds the options table the settings rows give (npm run docs:options)', (t) => {
  t.ok(
    render(text) === text,
    'regenerating the table changes nothing (else run npm run build && npm run docs:options)',
  );
  t.end();
});

test('the generated table has one line per settings row, and each variable is written once', (t) => {
  const generated = text.slice(text.indexOf(START) + START.length, text.indexOf(END));
  const rows = generated.split('\n').filter((l) => l.startsWith('| `'));
  t.equal(rows.length, SERVE_SETTINGS.length, `${SERVE_SETTINGS.length} rows`);
  SERVE_SETTINGS.forEach((s, i) => {
    t.ok(
      rows[i] && rows[i].startsWith(`| \`${s.key}\` | \`--${s.flag}`) && rows[i].includes(`| \`${s.env}\` |`),
      `row ${i + 1}: ${s.key}, --${s.flag}, ${s.env}`,
    );
  });
  const rest = text.slice(0, text.indexOf(START)) + text.slice(text.indexOf(END));
  const variables = new Set(rest.match(/`[A-Z][A-Z0-9_]+`/g) ?? []);
  const handWritten = [...variables].map((v) => v.slice(1, -1));
  t.ok(handWritten.length >= 10, `the hand-written table names the other variables (${handWritten.length})`);
  for (const s of SERVE_SETTINGS)
    t.notOk(handWritten.includes(s.env), `${s.env} is not written again outside the generated table`);
  t.end();
});
