'use strict';
// deserialize(): mutated serialized executables (envelope header, checksum,
// plugin payload) through the public API. Only intact bytes may reach the
// plugin; loaded executables are run once on zeros to show they work.
const fs = require('node:fs');
const path = require('node:path');
const { scriptsUnder } = require('./common');
const { sharedClient, expected } = require('./native');

const SEEDS = path.join(__dirname, '..', 'seeds', 'compile');
let client = null;
let serialized = [];

async function setup() {
  client = await sharedClient();
  serialized = [];
  for (const f of ['add.mlir', 'while.mlir']) {
    const exe = await client.compile(fs.readFileSync(path.join(SEEDS, f), 'utf8'));
    serialized.push(Buffer.from(await exe.serialize()));
    exe.dispose();
  }
}

async function run(data) {
  const exe = await client.deserialize(new Uint8Array(data));
  exe.dispose();
}

module.exports = {
  name: 'native-deserialize',
  smokeExecs: 1500,
  maxLength: 1 << 20,
  scripts: scriptsUnder('dist/runtime/'),
  setup,
  seeds: () => serialized,
  run,
  expected,
  dictionary: [
    'PJRTSCX2',
    'PJRTSCX1',
    '"platform"',
    '"platformVersion"',
    '"signature"',
    '"payloadSha256"',
    '"inputs"',
    '"outputs"',
    '"dtype"',
    '"dims"',
    '"f32"',
    '"s32"',
    'null',
    '[]',
    '{}',
  ],
};
