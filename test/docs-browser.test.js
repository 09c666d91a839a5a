'use strict';
/* global document, window -- page.evaluate and waitForFunction bodies run in the browser */
// GET /docs in a real headless browser: the Chromium that @sparticuz/chromium
// carries on npm (unpacked once into the OS temp dir), driven by
// puppeteer-core, which downloads no browser. Every request the page makes
// is allowed to 127.0.0.1 only and recorded: the renderer comes from the
// package, nothing from a CDN. With API keys on, the page asks for a key,
// reads /openapi.json with it, shows every documented route of the route
// table with the request examples, and runs one rerank from "Try it out"
// with the key: the answer is the service's for the same body. --no-docs
// turns the page off; its answers carry the CORS headers like every route.
const test = require('tape');
const { startService } = require('./helpers/service');

const KEY = 'docs-test-key-0123456789';
const ORIGIN = 'http://app.example.test';
const { ROUTES } = require('../dist/server/routes/table');

let service;
let browser;
let launchError = null;

async function launchBrowser() {
  const sparticuz = require('@sparticuz/chromium');
  const chromium = sparticuz.default ?? sparticuz;
  const puppeteer = require('puppeteer-core');
  const executablePath = await chromium.executablePath();
  try {
    return await puppeteer.launch({
      executablePath,
      args: chromium.args,
      headless: true,
      defaultViewport: { width: 1280, height: 2000 },
    });
  } catch (error) {
    // Say which shared libraries the unpacked Chromium lacks, if that is why (Debian packages provide them).
    const ldd = require('node:child_process').spawnSync('ldd', [executablePath], { encoding: 'utf8' });
    const missing = (ldd.stdout || '')
      .split('\n')
      .filter((l) => l.includes('not found'))
      .map((l) => l.trim().split(' ')[0]);
    throw new Error(`${error.message}${missing.length ? `; ${executablePath} lacks ${missing.join(', ')}` : ''}`, {
      cause: error,
    });
  }
}

test('setup: the service with keys, CORS and no prefix cache; the browser from npm', async (t) => {
  [service, browser] = await Promise.all([
    startService(['--api-key', KEY, '--cors-allow-origin', ORIGIN, '--warmup', 'none', '--prefix-cache-bytes', '0']),
    launchBrowser().catch((error) => {
      launchError = error;
      return null;
    }),
  ]);
  t.ok(browser, `Chromium from @sparticuz/chromium starts${launchError ? `: ${launchError.message}` : ''}`);
  t.end();
});

test('/docs: every documented route with its examples, offline, and one rerank run from the page with the key', async (t) => {
  if (!browser) return t.fail('no browser');
  const page = await browser.newPage();
  const elsewhere = [];
  const seen = [];
  await page.setRequestInterception(true);
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.protocol === 'data:') return request.continue(); // the stylesheet's inline images
    if (url.hostname === '127.0.0.1' && url.port === String(service.port)) {
      seen.push(`${request.method()} ${url.pathname}`);
      request.continue();
    } else {
      elsewhere.push(request.url());
      request.abort();
    }
  });
  const pageErrors = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  try {
    const base = `http://127.0.0.1:${service.port}`;
    const response = await page.goto(`${base}/docs`, { waitUntil: 'load' });
    t.equal(response.status(), 200, 'GET /docs is 200 without a key: the page says nothing of the service');
    await page.waitForSelector('#api-key.shown', { timeout: 30000 });
    t.ok(seen.includes('GET /openapi.json'), 'the page asked for /openapi.json, which wanted a key (401)');
    await page.type('#api-key-value', 'not-the-key');
    await page.click('#api-key-submit');
    await page.waitForFunction(() => document.getElementById('api-key-problem').textContent.includes('not accepted'), {
      timeout: 30000,
    });
    t.pass('a wrong key is refused and the page says so');
    await page.$eval('#api-key-value', (input) => (input.value = ''));
    await page.type('#api-key-value', KEY);
    await page.click('#api-key-submit');
    await page.waitForSelector('.opblock-summary-path', { timeout: 60000 });

    const shown = await page.$$eval('.opblock', (blocks) =>
      blocks.map(
        (b) =>
          `${[...b.classList]
            .find((c) => /^opblock-(get|post|put|delete|patch)$/.test(c))
            .slice(8)
            .toUpperCase()} ${b.querySelector('.opblock-summary-path').getAttribute('data-path')}`,
      ),
    );
    const documented = ROUTES.filter((r) => r.documented !== false).flatMap((r) =>
      r.methods.filter((m) => m !== 'HEAD').map((m) => `${m} ${r.path.replace(/:([A-Za-z_]+)/g, '{$1}')}`),
    );
    t.deepEqual(
      [...shown].sort(),
      [...documented].sort(),
      `the page shows every documented route of the route table (${documented.length})`,
    );
    t.notOk(
      shown.some((s) => s.includes('/docs')),
      'and not its own page',
    );

    // Open POST /v1/rerank: its examples, then Try it out with the first one.
    const rerank = await page.$('.opblock-post:has(.opblock-summary-path[data-path="/v1/rerank"])');
    await (await rerank.$('.opblock-summary-control')).click();
    await rerank.waitForSelector('.try-out__btn', { timeout: 30000 });
    const options = await rerank.$$eval('.examples-select option', (os) => os.map((o) => o.textContent));
    t.ok(
      options.length >= 4 &&
        options.some((o) => /Cohere v1/.test(o)) &&
        options.some((o) => /text-embeddings-inference/.test(o)),
      `its request examples are offered (${options.join(' | ')})`,
    );
    for (const [path, name] of [
      ['/v1/score', 'Softmax over the labels'],
      ['/v2/rerank', 'Cohere v2'],
    ]) {
      const block = await page.$(`.opblock-post:has(.opblock-summary-path[data-path="${path}"])`);
      await (await block.$('.opblock-summary-control')).click();
      await block.waitForSelector('.examples-select option', { timeout: 30000 });
      const names = await block.$$eval('.examples-select option', (os) => os.map((o) => o.textContent));
      t.ok(
        names.some((n) => n.includes(name)),
        `POST ${path} offers its examples (${names.join(' | ')})`,
      );
    }
    await (await rerank.$('.try-out__btn')).click();
    const body = JSON.parse(await rerank.$eval('textarea.body-param__text', (el) => el.value));
    await (await rerank.$('.execute')).click();
    await rerank.waitForSelector('.live-responses-table tr.response .response-col_status', { timeout: 120000 });
    const status = await rerank.$eval('.live-responses-table tr.response .response-col_status', (el) =>
      el.textContent.trim(),
    );
    t.equal(status, '200', 'Execute: 200, so the key went with it');
    const shownText = await rerank.$eval(
      '.live-responses-table tr.response .response-col_description pre',
      (el) => el.textContent,
    );
    const fromPage = JSON.parse(shownText);
    const direct = await service.request({
      method: 'POST',
      path: '/v1/rerank',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${KEY}` },
      body: JSON.stringify(body),
    });
    t.equal(direct.status, 200, 'the same body sent directly: 200');
    t.deepEqual(fromPage.results, direct.json.results, "the page's answer is the service's for the same body");
    t.ok(seen.includes('POST /v1/rerank'), 'the page sent POST /v1/rerank');
    t.deepEqual(elsewhere, [], 'the page asked nothing of any other host');
    t.deepEqual(pageErrors, [], 'no script error on the page');
  } finally {
    await page.close();
  }
});

test('/docs keeps CORS like every route; /openapi.json keeps its key', async (t) => {
  const page = await service.request({ path: '/docs', headers: { origin: ORIGIN } });
  t.equal(page.status, 200, 'GET /docs: 200');
  t.equal(page.headers['access-control-allow-origin'], ORIGIN, 'with the CORS header for an allowed origin');
  const other = await service.request({ path: '/docs', headers: { origin: 'http://other.example.test' } });
  t.equal(other.headers['access-control-allow-origin'], undefined, 'none for another origin');
  t.equal(
    (await service.request({ path: '/docs/package.json' })).status,
    404,
    'a file of the renderer it does not load: 404',
  );
  t.equal(
    (await service.request({ path: '/docs/../../package.json' })).status,
    401,
    'a path outside /docs: no route, so the key is asked first (401)',
  );
  t.equal((await service.request({ path: '/openapi.json' })).status, 401, '/openapi.json without the key: 401');
  t.end();
});

test('mounted in fastify under a prefix: the page, its assets and its document under the prefix', async (t) => {
  if (!browser) return t.fail('no browser');
  const Fastify = require('fastify');
  const { createScoringService, silentLogger } = require('../dist/server');
  const scoring = createScoringService({ logger: silentLogger(), warmup: [] });
  const app = Fastify();
  await app.register(scoring.fastifyPlugin({ openapi: true, docs: true }), { prefix: '/api' });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const page = await browser.newPage();
  const asked = [];
  page.on('request', (request) => asked.push(new URL(request.url()).pathname));
  try {
    await page.goto(`http://127.0.0.1:${app.server.address().port}/api/docs`, { waitUntil: 'load' });
    await page.waitForSelector('.opblock-summary-path', { timeout: 60000 });
    const paths = await page.$$eval('.opblock-summary-path', (els) => els.map((e) => e.getAttribute('data-path')));
    t.ok(
      paths.includes('/v1/score') && paths.includes('/v2/rerank'),
      `the mount's routes are shown (${paths.join(', ')})`,
    );
    for (const path of ['/api/docs/swagger-ui-bundle.js', '/api/docs/loader.js', '/api/openapi.json'])
      t.ok(asked.includes(path), `the page asked for ${path}`);
    const server = await page.evaluate(() => window.apiReference.specSelectors.specJson().toJS().servers[0].url);
    t.equal(new URL(server).pathname, '/api', 'Try it out is sent under the prefix');
  } finally {
    await page.close();
    await app.close();
    await scoring.close();
  }
  t.end();
});

test('--no-docs: no page', async (t) => {
  const off = await startService(['--no-docs', '--warmup', 'none']);
  try {
    t.equal((await off.request({ path: '/docs' })).status, 404, 'GET /docs: 404');
    t.equal((await off.request({ path: '/docs/swagger-ui-bundle.js' })).status, 404, 'its assets: 404');
    t.equal((await off.request({ path: '/openapi.json' })).status, 200, '/openapi.json still served');
  } finally {
    await off.stop();
  }
  t.end();
});

test('teardown', async (t) => {
  if (browser) await browser.close();
  await service.stop();
  t.end();
});
