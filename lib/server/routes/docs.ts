/**
 * GET /docs: the API's interactive reference, Swagger UI (npm
 * `swagger-ui-dist`, served from the package: nothing from a CDN, so it
 * works offline) over GET /openapi.json. The page and its assets are the
 * same for every caller and say nothing of the service, so they are open
 * like the probes (network/access.ts); the document and every route it tries
 * keep their keys: with keys on, the page asks for one, reads the document
 * with it and sends it with each "Try it out" (loader below). The URLs are
 * relative, and "Try it out" is sent under the page's own base, so the page
 * works under a mount's prefix.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { HttpError } from '../http/http-errors';
import { Exchange, Reply } from '../http/exchange';

/** The files of swagger-ui-dist the page loads, by the name they are served as. */
const RENDERER_FILES: Readonly<Record<string, string>> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
};

/** The security scheme's name in /openapi.json (openapi.ts) that the loader authorizes. */
export const BEARER_SCHEME = 'bearer';

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>API reference</title>
<link rel="stylesheet" href="docs/swagger-ui.css">
<style>
  #api-key { display: none; font-family: sans-serif; max-width: 40em; margin: 2em auto; }
  #api-key.shown { display: block; }
  #api-key input { width: 24em; }
</style>
</head>
<body>
<form id="api-key">
  <p>This service needs an API key to read its API document.</p>
  <p id="api-key-problem"></p>
  <label>API key <input id="api-key-value" type="password" autocomplete="off"></label>
  <button id="api-key-submit" type="submit">Load</button>
</form>
<div id="swagger-ui"></div>
<script src="docs/swagger-ui-bundle.js"></script>
<script src="docs/loader.js"></script>
</body>
</html>
`;

/**
 * Reads ./openapi.json (with the key once one is given; a 401 asks for it)
 * and starts Swagger UI on the document, the key authorized for "Try it out".
 */
const LOADER = `'use strict';
(function () {
  var documentUrl = new URL('openapi.json', window.location.href).href;
  var form = document.getElementById('api-key');
  function start(spec, key) {
    form.className = '';
    // Try it out goes where the page came from: the origin, under a mount's prefix if any.
    var base = new URL('.', window.location.href).href;
    if (!spec.servers) spec.servers = [{ url: base.slice(0, base.length - 1) }];
    var ui = window.SwaggerUIBundle({
      spec: spec,
      dom_id: '#swagger-ui',
      deepLinking: true,
      defaultModelsExpandDepth: 0,
    });
    if (key) ui.preauthorizeApiKey(${JSON.stringify(BEARER_SCHEME)}, key);
    window.apiReference = ui;
  }
  function ask(problem) {
    document.getElementById('api-key-problem').textContent = problem || '';
    form.className = 'shown';
  }
  function load(key) {
    var headers = key ? { authorization: 'Bearer ' + key } : {};
    return fetch(documentUrl, { headers: headers }).then(function (response) {
      if (response.status === 401) return ask(key ? 'That key was not accepted.' : '');
      if (!response.ok) return ask('GET ' + documentUrl + ' answered ' + response.status + '.');
      return response.json().then(function (spec) { start(spec, key); });
    }, function (error) { ask('GET ' + documentUrl + ' failed: ' + error.message); });
  }
  form.addEventListener('submit', function (event) {
    event.preventDefault();
    load(document.getElementById('api-key-value').value.trim());
  });
  load('');
})();
`;

let rendererDir: string | null = null;
const cache = new Map<string, string>();

/** The page. */
export function docsPage(): Reply {
  return { status: 200, contentType: 'text/html; charset=utf-8', body: PAGE, headers: { 'cache-control': 'no-cache' } };
}

/** One asset of the page: the renderer's files from swagger-ui-dist, or the loader. Anything else is a 404. */
export function docsAsset(ex: Exchange): Reply {
  // The request's own URL: a mount's exchange carries the route's pattern as its path.
  const name = (ex.req.url ?? ex.path).split('?')[0].split('/').pop() ?? '';
  if (name === 'loader.js')
    return {
      status: 200,
      contentType: 'text/javascript; charset=utf-8',
      body: LOADER,
      headers: { 'cache-control': 'no-cache' },
    };
  const contentType = Object.prototype.hasOwnProperty.call(RENDERER_FILES, name) ? RENDERER_FILES[name] : undefined;
  if (contentType === undefined)
    throw new HttpError(404, `no asset ${JSON.stringify(name.slice(0, 100))} under /docs`, { param: 'path' });
  let body = cache.get(name);
  if (body === undefined) {
    rendererDir ??= path.dirname(require.resolve('swagger-ui-dist/package.json'));
    body = fs.readFileSync(path.join(rendererDir, name), 'utf8');
    cache.set(name, body);
  }
  return { status: 200, contentType, body, headers: { 'cache-control': 'public, max-age=3600' } };
}
