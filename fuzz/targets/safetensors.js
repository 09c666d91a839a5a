'use strict';
// safetensors reader: the JSON header (length prefix, dtypes, shapes,
// offsets) and tensor reads from a mutated file.
const fs = require('node:fs');
const path = require('node:path');
const { DIST, scratchFile, scriptsUnder, tolerate } = require('./common');
const tiny = require('../../test/helpers/tiny-model');

const model = require(path.join(DIST, 'model'));
const expected = (e) => e instanceof model.SafetensorsError;

function seeds() {
  const file = scratchFile('seed.safetensors');
  const values = (n) => Float64Array.from({ length: n }, (_, i) => Math.fround(Math.sin(i)));
  const out = [];
  tiny.writeSafetensors(file, [
    { name: 'a.weight', dtype: 'F32', shape: [2, 3], values: values(6) },
    { name: 'b.bias', dtype: 'F16', shape: [4], values: values(4) },
    { name: 'c', dtype: 'BF16', shape: [2, 2], values: values(4) },
  ]);
  out.push(fs.readFileSync(file));
  tiny.writeSafetensors(file, [{ name: 'scalar', dtype: 'F32', shape: [], values: values(1) }]);
  out.push(fs.readFileSync(file));
  return out;
}

function run(data) {
  const file = scratchFile('input.safetensors');
  fs.writeFileSync(file, data);
  const st = model.SafetensorsFile.open(file);
  try {
    for (const name of [...st.tensors.keys()].slice(0, 64)) tolerate(expected, () => st.readTensorFloat32(name));
  } finally {
    st.close();
  }
}

module.exports = {
  name: 'safetensors',
  smokeExecs: 1500,
  maxLength: 1 << 16,
  scripts: scriptsUnder('dist/model/'),
  seeds,
  run,
  expected,
  dictionary: [
    '"dtype"',
    '"shape"',
    '"data_offsets"',
    '"__metadata__"',
    '"F32"',
    '"F16"',
    '"BF16"',
    '"I64"',
    '[',
    ']',
    '{',
    '}',
    ',',
  ],
};
