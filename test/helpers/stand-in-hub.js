'use strict';
/**
 * A stand-in for the Hugging Face hub on 127.0.0.1, in the hub's URL layout
 * and headers as huggingface_hub and @huggingface/hub read them:
 *
 *   GET|HEAD /{org}/{repo}/resolve/{rev}/{path}   small files: 200/206 with ETag (git blob
 *            sha1), X-Repo-Commit; LFS files (*.gguf, *.safetensors): 302 to /cdn/{sha256}
 *            with X-Linked-Etag, X-Linked-Size, X-Repo-Commit (as the hub sends to its CDN)
 *   GET|HEAD /cdn/{sha256}                        the bytes, Range -> 206 + Content-Range
 *   GET /api/models/{org}/{repo}/revision/{rev}   { id, sha, siblings }
 *   GET /api/models/{org}/{repo}/tree/{rev}       [{ type, path, size, oid, lfs: { oid, size } }]
 *   refusals: 401 + X-Error-Code GatedRepo (gated repo, no Authorization),
 *   RepoNotFound / RevisionNotFound / EntryNotFound (404)
 *
 * startStandInHub({ repos: { 'org/repo': { files: { name: absPath | Buffer }, gated } } })
 *   -> { url, requests: [{ method, path, range, authorization }], commitOf(repo), fileOf(repo, name),
 *        dropOnce(sha256), corrupt(sha256), uncorrupt(sha256), close() }
 * dropOnce: the next full GET of that blob sends half its bytes and closes the connection.
 * corrupt: that blob is served with one byte changed (the listed sha256 stays the real one).
 */
const http = require('node:http');
const fs = require('node:fs');
const crypto = require('node:crypto');

const isLfs = (name) => /\.(gguf|safetensors)$/.test(name);

function describeFile(source) {
  const bytes = Buffer.isBuffer(source) ? source : null;
  const size = bytes ? bytes.length : fs.statSync(source).size;
  const sha256 = crypto.createHash('sha256');
  const sha1 = crypto.createHash('sha1').update(`blob ${size}\0`);
  const data = bytes ?? fs.readFileSync(source);
  sha256.update(data);
  sha1.update(data);
  return { source, size, sha256: sha256.digest('hex'), gitSha1: sha1.digest('hex') };
}

function startStandInHub({ repos }) {
  const table = new Map();
  const blobs = new Map();
  for (const [repo, spec] of Object.entries(repos)) {
    const files = new Map();
    for (const [name, source] of Object.entries(spec.files)) {
      const file = { name, ...describeFile(source) };
      files.set(name, file);
      blobs.set(file.sha256, file);
    }
    const commit = crypto
      .createHash('sha1')
      .update(`${repo}:${[...files.values()].map((f) => f.sha256).join(',')}`)
      .digest('hex');
    table.set(repo, { commit, files, gated: !!spec.gated });
  }
  const requests = [];
  const drops = new Set();
  const corrupted = new Set();

  function refuse(res, status, code, message) {
    res.writeHead(status, { 'X-Error-Code': code, 'X-Error-Message': message, 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ error: message }));
  }

  function sendBytes(req, res, file, headers) {
    const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
    const start = range ? Number(range[1]) : 0;
    const end = range && range[2] !== '' ? Math.min(Number(range[2]), file.size - 1) : file.size - 1;
    const head = {
      ...headers,
      'Accept-Ranges': 'bytes',
      'Content-Type': 'application/octet-stream',
      'Content-Length': String(end - start + 1),
    };
    if (range) head['Content-Range'] = `bytes ${start}-${end}/${file.size}`;
    res.writeHead(range ? 206 : 200, head);
    if (req.method === 'HEAD') return res.end();
    let data = (file.data ??= Buffer.isBuffer(file.source) ? file.source : fs.readFileSync(file.source));
    if (corrupted.has(file.sha256)) {
      data = Buffer.from(data);
      data[data.length >> 1] ^= 0xff;
    }
    const body = data.subarray(start, end + 1);
    if (drops.has(file.sha256) && body.length > 1) {
      drops.delete(file.sha256);
      res.write(body.subarray(0, body.length >> 1), () => setTimeout(() => res.socket.destroy(), 50));
      return;
    }
    res.end(body);
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const p = decodeURIComponent(url.pathname);
    requests.push({
      method: req.method,
      path: p,
      range: req.headers.range ?? null,
      authorization: req.headers.authorization ?? null,
    });
    const cdn = /^\/cdn\/([0-9a-f]{64})$/.exec(p);
    if (cdn) {
      const file = blobs.get(cdn[1]);
      if (!file) return refuse(res, 404, 'EntryNotFound', 'no such blob');
      return sendBytes(req, res, file, { ETag: `"${file.sha256}"` });
    }
    const api = /^\/api\/models\/([^/]+\/[^/]+)\/(revision|tree)\/([^/]+)(?:\/(.*))?$/.exec(p);
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(p);
    const m = api ?? resolve;
    if (!m) return refuse(res, 404, 'NotFound', 'no such route');
    const repo = table.get(m[1]);
    if (!repo) return refuse(res, 401, 'RepoNotFound', `Repository Not Found for url: ${req.url}`);
    if (repo.gated && !req.headers.authorization) {
      return refuse(
        res,
        401,
        'GatedRepo',
        `Access to model ${m[1]} is restricted. You must have access to it and be authenticated to access it.`,
      );
    }
    const rev = api ? m[3] : m[2];
    if (rev !== 'main' && rev !== 'HEAD' && rev !== repo.commit)
      return refuse(res, 404, 'RevisionNotFound', `Invalid rev id: ${rev}`);
    const files = [...repo.files.values()];
    if (api && m[2] === 'revision') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      return res.end(
        JSON.stringify({
          _id: crypto.createHash('md5').update(m[1]).digest('hex').slice(0, 24),
          id: m[1],
          modelId: m[1],
          sha: repo.commit,
          private: false,
          gated: repo.gated ? 'auto' : false,
          disabled: false,
          downloads: 0,
          likes: 0,
          tags: [],
          lastModified: '2026-01-01T00:00:00.000Z',
          createdAt: '2026-01-01T00:00:00.000Z',
          siblings: files.map((f) => ({ rfilename: f.name })),
        }),
      );
    }
    if (api) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      return res.end(
        JSON.stringify(
          files.map((f) => ({
            type: 'file',
            oid: f.gitSha1,
            size: isLfs(f.name) ? 134 : f.size,
            path: f.name,
            ...(isLfs(f.name) ? { lfs: { oid: f.sha256, size: f.size, pointerSize: 134 } } : {}),
          })),
        ),
      );
    }
    const file = repo.files.get(m[3]);
    if (!file) return refuse(res, 404, 'EntryNotFound', `${m[3]} does not exist on ${rev}`);
    const common = { 'X-Repo-Commit': repo.commit };
    if (isLfs(file.name)) {
      const port = server.address().port;
      res.writeHead(302, {
        ...common,
        Location: `http://127.0.0.1:${port}/cdn/${file.sha256}`,
        ETag: `"${file.gitSha1}"`,
        'X-Linked-Etag': `"${file.sha256}"`,
        'X-Linked-Size': String(file.size),
        'Content-Length': '0',
      });
      return res.end();
    }
    return sendBytes(req, res, file, { ...common, ETag: `"${file.gitSha1}"` });
  });
  return new Promise((resolveStart) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      resolveStart({
        url: `http://127.0.0.1:${port}`,
        requests,
        commitOf: (repo) => table.get(repo).commit,
        fileOf: (repo, name) => table.get(repo).files.get(name),
        dropOnce: (sha256) => drops.add(sha256),
        corrupt: (sha256) => corrupted.add(sha256),
        uncorrupt: (sha256) => corrupted.delete(sha256),
        close: () =>
          new Promise((done) => {
            server.closeAllConnections?.();
            server.close(() => done());
          }),
      });
    });
  });
}

module.exports = { startStandInHub };
