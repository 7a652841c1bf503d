// End-to-end test of The Bridge (GET /viewer) in a real headless Chromium.
//
// Starts the real binary's `demo` (two sample stores and the callosum, on an ephemeral port; once
// `serve` instead, whose config file a test edits under it), drives
// the page with playwright-core against Debian's /usr/bin/chromium, and fails on any console error or
// page error the test did not expect. Screenshots of every tab (desktop and 390 px wide) land in
// target/e2e-screenshots/. Run through tests/e2e/run.sh, which takes the binary from $SCC_BIN.
//
// No sleeps: every wait is on a selector, a response, or a process line, with a bounded timeout.
//
// SCC_VIEWER_FROM_DISK=1 tests viewer/index.html as it is on disk against a binary built before its
// last edit: the browser's GET /viewer still goes to the binary, and its answer (status and headers,
// the Content-Security-Policy included) comes back with the page from disk as its body.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.resolve(ROOT, process.env.SCC_BIN || 'target/debug/seren-corpus-callosum');
const CHROMIUM = process.env.CHROMIUM_BIN || '/usr/bin/chromium';
const SHOTS = path.join(ROOT, 'target', 'e2e-screenshots');
const STARTUP_MS = 30_000;
const UI_MS = 10_000;
const TEST_MS = 90_000;
const TOKEN = 'e2e-bridge-token-3b7f';
const DEAD = 'dead-e2e';

const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync',
  '--disable-dev-shm-usage',
];

mkdirSync(SHOTS, { recursive: true });

// ---- the demo process ---------------------------------------------------------------------------

// The page is compiled into the binary (include_str!), so a binary built before the last edit of
// viewer/index.html serves the old page: say so once, plainly, rather than fail on a missing field.
const VIEWER_FILE = path.join(ROOT, 'viewer', 'index.html');
const FROM_DISK = process.env.SCC_VIEWER_FROM_DISK === '1';
let viewerChecked = null;
function checkViewerIsFresh(base) {
  viewerChecked ??= fetch(`${base}/viewer`).then(async (response) => {
    const served = await response.text();
    assert.equal(response.status, 200, `GET /viewer answered ${response.status}`);
    if (served === readFileSync(VIEWER_FILE, 'utf8')) return;
    if (FROM_DISK) {
      process.stderr.write(`e2e: ${BIN} serves another viewer/index.html; SCC_VIEWER_FROM_DISK=1, so the browser gets the one on disk\n`);
    } else {
      throw new Error(`${BIN} serves another viewer/index.html than the one on disk: the binary was built before the page's last edit; rebuild it (cargo build)`);
    }
  });
  return viewerChecked;
}

const running = new Set();
process.on('exit', () => { for (const child of running) { try { child.kill('SIGKILL'); } catch { /* gone */ } } });

/**
 * Starts `demo --port 0` (plus `extraArgs`, e.g. `['-c', file]`, after the subcommand, where `demo`
 * takes its options) and resolves once its banner names the viewer's address.
 */
function startDemo(extraEnv = {}, extraArgs = []) {
  return startBinary(['demo', ...extraArgs, '--port', '0'], extraEnv);
}

/**
 * Starts the binary with `args` (a subcommand and its options) in a clean environment and resolves
 * once it names its address (the demo's banner, or serve's "listening on").
 */
function startBinary(args, extraEnv = {}) {
  const what = args[0];
  const home = mkdtempSync(path.join(os.tmpdir(), 'scc-e2e-home-'));
  const env = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!key.startsWith('SEREN_')) env[key] = value; // hermetic: no token or config from outside
  }
  Object.assign(env, { HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), RUST_LOG: 'info', NO_COLOR: '1' }, extraEnv);
  const child = spawn(BIN, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  const log = [];
  let buffered = '';
  const waiters = new Set();
  const demo = {
    child, home, log, url: null,
    // Resolves once `ready(log)` holds, checked at every new line; the log is written after the
    // answer it records, so a test that reads it right after a response waits here, bounded.
    waitForLog(ready, what, timeoutMs = UI_MS) {
      if (ready(log)) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const waiter = () => { if (ready(log)) { done(); resolve(); } };
        const timer = setTimeout(() => { done(); reject(new Error(`no ${what} in the log within ${timeoutMs} ms:\n${log.slice(-40).join('\n')}`)); }, timeoutMs);
        const done = () => { clearTimeout(timer); waiters.delete(waiter); };
        waiters.add(waiter);
      });
    },
    async stop() {
      running.delete(child);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(home, { recursive: true, force: true });
    },
  };
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      demo.stop();
      reject(new Error(`${what} did not print its address within ${STARTUP_MS} ms:\n${log.join('\n')}`));
    }, STARTUP_MS);
    const onData = (chunk) => {
      buffered += chunk.toString('utf8');
      let nl;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        log.push(line);
        for (const waiter of [...waiters]) waiter();
        const match = /The Bridge:\s+(http:\/\/[^\s/]+)\/viewer/.exec(line)
          || /listening on (http:\/\/[^\s/]+)/.exec(line);
        if (match && !demo.url) {
          demo.url = match[1];
          clearTimeout(timer);
          checkViewerIsFresh(demo.url).then(() => resolve(demo), (error) => { demo.stop(); reject(error); });
        }
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (error) => { clearTimeout(timer); running.delete(child); reject(error); });
    child.once('exit', (code, signal) => {
      const expected = !running.has(child);
      running.delete(child);
      if (!demo.url) {
        clearTimeout(timer);
        reject(new Error(`${what} exited (${code ?? signal}) before printing its address:\n${log.join('\n')}`));
      } else if (!expected) {
        // It died under the test: say so loudly, with its log, since the page will only see refusals.
        process.stderr.write(`\n!! the ${what} exited (${code ?? signal}) while the test was running; its log:\n${log.join('\n')}\n`);
      }
    });
  });
}

// ---- the browser --------------------------------------------------------------------------------

let browser;

before(async () => {
  assert.ok(existsSync(BIN), `no binary at ${BIN}; build it first (cargo build) or set SCC_BIN`);
  assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}; apt-get install -y chromium`);
  // launch() gives every run a fresh, empty, temporary profile (its own --user-data-dir).
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: STARTUP_MS });
});

after(async () => {
  if (browser) await browser.close();
});

/**
 * A fresh browser context; with SCC_VIEWER_FROM_DISK=1, its GET /viewer answers carry the page on disk.
 */
async function newContext(options) {
  const context = await browser.newContext(options);
  if (FROM_DISK) {
    const page = readFileSync(VIEWER_FILE, 'utf8');
    await context.route((url) => url.pathname === '/viewer' || url.pathname === '/viewer/', async (route) => {
      const response = await route.fetch();
      await route.fulfill({ response, body: page });
    });
  }
  return context;
}

/**
 * A fresh context and page that records every console error and page error. A failed HTTP call
 * shows up in Chromium's console as "Failed to load resource: ... status of N"; the test declares
 * each one it provokes on purpose with `page.expectHttpError(status, path)` (one call allows one such
 * line), and nothing else passes.
 */
async function openPage(viewport = { width: 1280, height: 900 }) {
  const context = await newContext({ viewport, deviceScaleFactor: 1, reducedMotion: 'reduce' });
  const page = await context.newPage();
  page.setDefaultTimeout(UI_MS);
  page.setDefaultNavigationTimeout(UI_MS);
  const problems = [];
  const allowed = [];
  page.on('console', (message) => {
    if (message.type() !== 'error') return;
    const text = message.text();
    const where = message.location() && message.location().url ? message.location().url : '';
    const http = /Failed to load resource: the server responded with a status of (\d+)/.exec(text);
    if (http) {
      const status = Number(http[1]);
      const index = allowed.findIndex((a) => a.seen === 0 && a.status === status && where && new URL(where).pathname === a.path);
      if (index >= 0) { allowed[index].seen += 1; return; }
    }
    problems.push(`console error: ${text}${where ? ` (${where})` : ''}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.stack || error.message}`));
  page.on('requestfailed', (request) => problems.push(`request failed: ${request.method()} ${request.url()}: ${request.failure()?.errorText}`));
  page.expectHttpError = (status, apiPath) => allowed.push({ status, path: apiPath, seen: 0 });
  page.assertClean = () => assert.deepEqual(problems, [], 'the page logged errors');
  return { context, page };
}

async function shot(page, name, { fromTop = true } = {}) {
  await page.evaluate(() => document.fonts && document.fonts.ready);
  // From the top: a full-page picture taken scrolled down paints the sticky header where the
  // window was, over the content, as if it overlapped it. The scroll is put back after. A picture
  // of the Knobs tab (its sticky Apply bar) is taken as scrolled (fromTop: false).
  const scrolled = await page.evaluate((top) => { const y = window.scrollY; if (top) window.scrollTo(0, 0); return y; }, fromTop);
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true, animations: 'disabled', caret: 'hide' });
  await page.evaluate((y) => window.scrollTo(0, y), scrolled);
}

function waitForApi(page, method, apiPath, status) {
  return page.waitForResponse((response) => {
    const request = response.request();
    return request.method() === method && new URL(response.url()).pathname === apiPath
      && (status === undefined || response.status() === status);
  }, { timeout: UI_MS });
}

async function search(page, query, n, budget) {
  await page.getByRole('tab', { name: 'Search' }).click();
  await page.getByLabel('Query', { exact: true }).fill(query);
  if (n !== undefined) await page.getByLabel('Results', { exact: true }).fill(String(n));
  if (budget !== undefined) await page.getByLabel('Token budget', { exact: true }).fill(String(budget));
  const answered = waitForApi(page, 'POST', '/search');
  await page.getByLabel('Query', { exact: true }).press('Enter');
  const response = await answered;
  assert.equal(response.status(), 200, `POST /search answered ${response.status()}`);
  await page.locator('#search-status .fanned').waitFor();
  return response.json();
}

/**
 * The header pill after `answer`: "answered A/F" (A the stores that answered, F those fanned), green
 * when every fanned store answered, else in the failing colour with each failed store and its reason
 * in its title and in its text for a screen reader.
 */
async function checkAnsweredPill(page, answer) {
  const answered = answer.stores_searched.length;
  const fanned = answered + answer.failed.length;
  const pill = page.locator('#pill');
  await pill.locator('b', { hasText: `${answered}/${fanned}` }).waitFor();
  const said = await pill.textContent();
  const failedNames = answer.failed.map((failed) => failed.name).join(', ');
  assert.equal(said, `answered ${answered}/${fanned}` + (answer.failed.length ? ` \u2014 ${failedNames} failed` : ''));
  const colour = await pill.locator('b').evaluate((node) => getComputedStyle(node).color);
  const title = await pill.getAttribute('title');
  if (answer.failed.length) {
    assert.ok(await pill.evaluate((node) => node.classList.contains('bad')), await pill.getAttribute('class'));
    assert.equal(colour, 'rgb(255, 107, 129)', 'the failing colour (--bad)');
    for (const failed of answer.failed) {
      assert.ok(title.includes(`${failed.name} failed: ${failed.reason}`), `the title names ${failed.name}: ${title}`);
      assert.ok(said.includes(`${failed.name}`) && said.includes('failed'), `a screen reader hears ${failed.name} failed: ${said}`);
    }
  } else {
    assert.ok(await pill.evaluate((node) => node.classList.contains('ok')), await pill.getAttribute('class'));
    assert.equal(colour, 'rgb(95, 211, 154)', 'green (--ok)');
    assert.doesNotMatch(title + said, /failed/);
  }
  for (const name of answer.stores_searched) assert.ok(title.includes(name), `the title names ${name}: ${title}`);
}

async function noHorizontalScroll(page) {
  const { scroll, client } = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth,
  }));
  assert.ok(scroll <= client, `the page scrolls sideways: ${scroll}px of content in ${client}px`);
}

// ---- without a token ----------------------------------------------------------------------------

describe('The Bridge against the demo (no token)', () => {
  let demo;
  before(async () => { demo = await startDemo(); });
  after(async () => { if (demo) await demo.stop(); });

  test('search, roster add/duplicate/remove, overview, narrow screen', { timeout: TEST_MS }, async () => {
    const { context, page } = await openPage();
    try {
      // The page is public and loads with its title and a roster pill.
      const response = await page.goto(`${demo.url}/viewer`);
      assert.equal(response.status(), 200);
      assert.equal(await page.title(), 'SerenCorpusCallosum · The Bridge');
      await page.locator('#pill', { hasText: 'fanning: 2/2' }).waitFor();
      await page.locator('#footer', { hasText: /v\d/ }).waitFor();
      await page.locator('#search-empty').waitFor();
      await shot(page, 'desktop-0-search-empty');

      // ---- Search: hits from both stores, badged by type, with provenance.
      const answer = await search(page, 'that CUDA thing on the Xavier', 10);
      const hits = page.locator('#hits li.hit');
      await hits.first().waitFor();
      // The pill now says who answered: both, in green.
      assert.deepEqual(answer.failed, []);
      await checkAnsweredPill(page, answer);
      assert.equal(await hits.count(), answer.hits.length);
      assert.ok(answer.hits.length >= 2);
      const memoryBadge = page.locator('#hits .hit .badge.t-memory', { hasText: 'episodic' });
      const lociBadge = page.locator('#hits .hit .badge.t-loci', { hasText: 'facts' });
      assert.ok(await memoryBadge.count() >= 1, 'an episodic (seren_memory, coral) hit');
      assert.ok(await lociBadge.count() >= 1, 'a facts (seren_loci, cyan) hit');
      const coral = await memoryBadge.first().evaluate((node) => getComputedStyle(node).color);
      const cyan = await lociBadge.first().evaluate((node) => getComputedStyle(node).color);
      assert.equal(coral, 'rgb(255, 122, 107)');
      assert.equal(cyan, 'rgb(64, 211, 227)');

      const first = hits.first();
      const firstHit = answer.hits[0];
      assert.equal(await first.locator('.rank').textContent(), `#${firstHit.store_rank}`);
      assert.equal(await first.locator('.content').textContent(), firstHit.content);
      const prov = await first.locator('.prov').innerText();
      for (const label of ['rrf', 'rel', 'native', 'd=']) assert.ok(prov.includes(label), `provenance shows ${label}: ${prov}`);
      // A loci hit has no raw distance: shown as an em dash, not "null".
      const lociCard = page.locator('#hits li.hit[data-store="facts"]').first();
      assert.match(await lociCard.locator('.prov').innerText(), /d=\s*—/);
      assert.doesNotMatch(await page.locator('#hits').innerText(), /null|undefined|NaN/);
      // Metadata on demand.
      const meta = first.locator('details.meta dl');
      assert.equal(await meta.isVisible(), false);
      await first.locator('details.meta summary').click();
      await meta.waitFor({ state: 'visible' });
      const metaText = await meta.innerText();
      assert.ok(metaText.includes(firstHit.id));
      assert.doesNotMatch(metaText, /\[object|undefined/, 'every metadata entry is shown as text');
      for (const [key, value] of Object.entries(firstHit.metadata)) {
        assert.ok(metaText.includes(key) && metaText.includes(String(value)), `metadata shows ${key}: ${metaText}`);
      }
      await first.locator('details.meta summary').click();
      assert.equal(await page.locator('#search-notices .notice').count(), 0, 'no failed or skipped store yet');
      await shot(page, 'desktop-1-search');

      // Server text is shown as text, never markup.
      const hostile = '<b>qqqzz</b><img src=x onerror="self.__pwned=1">';
      await search(page, hostile);
      await page.locator('#hits li.empty').waitFor();
      assert.ok((await page.locator('#hits li.empty').innerText()).includes(hostile));
      assert.equal(await page.locator('#panel-search img, #panel-search b:not(.fanned b)').count(), 0);
      assert.equal(await page.evaluate(() => window.__pwned), undefined);

      // A bad n_results is caught before the call.
      await page.getByLabel('Results', { exact: true }).fill('500');
      await page.getByLabel('Query', { exact: true }).press('Enter');
      await page.locator('#search-status.error', { hasText: '1 to 200' }).waitFor();
      await page.getByLabel('Results', { exact: true }).fill('');

      // ---- Stores: the roster, by keyboard from the tab strip.
      await page.getByRole('tab', { name: 'Search' }).focus();
      await page.keyboard.press('ArrowRight');
      assert.equal(await page.getByRole('tab', { name: 'Stores' }).getAttribute('aria-selected'), 'true');
      assert.ok(await page.locator('#panel-stores').isVisible());
      const roster = page.locator('#roster li.store');
      await roster.nth(1).waitFor();
      for (const [name, type] of [['episodic', 't-memory'], ['facts', 't-loci']]) {
        const card = page.locator(`#roster li.store[data-store="${name}"]`);
        assert.equal(await card.getAttribute('data-status'), 'active');
        assert.ok(await card.locator(`.badge.${type}`).isVisible());
        assert.ok((await card.innerText()).includes('config file'));
        assert.equal(await card.locator('button.x').count(), 0, `no ✕ on the base store ${name}`);
        const facts = await card.locator('.facts').innerText();
        assert.match(facts, /weight\s*1/);
        assert.match(facts, /floor\s*0/);
      }
      await shot(page, 'desktop-2-stores');

      // Add a store at a closed port, through the form's labelled fields.
      await page.getByRole('button', { name: '+ Add store' }).click();
      await page.locator('#add-form').getByLabel('Name').waitFor({ state: 'visible' });
      const types = await page.locator('#f-type option').allTextContents();
      assert.ok(types.includes('seren_memory') && types.includes('seren_loci'), `types from the server: ${types}`);
      await page.locator('#add-form').getByLabel('Name').fill(DEAD);
      await page.locator('#add-form').getByLabel('Type').selectOption('seren_memory');
      await page.locator('#add-form').getByLabel('URL').fill('http://127.0.0.1:9');
      await page.locator('#add-form').getByLabel('Weight').fill('0.5');
      await page.locator('#add-form').getByLabel('Floor').fill('0.1');
      await page.locator('#add-form').getByLabel(/^Token/).fill('store-secret');
      await shot(page, 'desktop-3-add-form');
      const added = waitForApi(page, 'POST', '/stores');
      await page.getByRole('button', { name: 'Add store', exact: true }).click();
      assert.equal((await added).status(), 200);
      const deadCard = page.locator(`#roster li.store[data-store="${DEAD}"]`);
      await deadCard.waitFor();
      assert.ok((await deadCard.innerText()).includes('http://127.0.0.1:9'));
      assert.match(await deadCard.locator('.facts').innerText(), /weight\s*0\.5[\s\S]*floor\s*0\.1/);
      assert.ok(await deadCard.getByRole('img', { name: 'auth token set' }).isVisible(), 'the 🔒 shows');
      assert.ok(await deadCard.getByRole('button', { name: `Remove store ${DEAD}` }).isVisible(), 'a ✕ on the managed store');
      assert.ok(!(await page.content()).includes('store-secret'), 'the store token is never shown');
      await page.locator('#pill', { hasText: 'fanning: 3/3' }).waitFor();
      await page.locator('#stores-notices .notice.success', { hasText: DEAD }).waitFor();

      // A duplicate name shows the server's 409 text; a bad name its 400 text.
      page.expectHttpError(409, '/stores');
      await page.getByRole('button', { name: '+ Add store' }).click();
      await page.locator('#add-form').getByLabel('Name').fill(DEAD);
      await page.locator('#add-form').getByLabel('URL').fill('http://127.0.0.1:9');
      const conflict = waitForApi(page, 'POST', '/stores');
      await page.locator('#add-form').getByLabel('URL').press('Enter');
      assert.equal((await conflict).status(), 409);
      await page.locator('#add-error', { hasText: `a store named '${DEAD}' already exists` }).waitFor();
      page.expectHttpError(400, '/stores');
      await page.locator('#add-form').getByLabel('Name').fill('bad name');
      const invalid = waitForApi(page, 'POST', '/stores');
      await page.getByRole('button', { name: 'Add store', exact: true }).click();
      assert.equal((await invalid).status(), 400);
      await page.locator('#add-error', { hasText: "name 'bad name' must be" }).waitFor();
      await shot(page, 'desktop-4-add-error');
      await page.getByRole('button', { name: 'Cancel' }).click();
      assert.equal(await page.locator('#add-form').isVisible(), false);

      // The next search lists the dead store as failed, with its reason; the others still answer.
      const withDead = await search(page, 'jetpack');
      assert.ok(withDead.failed.some((f) => f.name === DEAD));
      const failedNotice = page.locator('#search-notices .notice.failed');
      await failedNotice.waitFor();
      const failedText = await failedNotice.innerText();
      assert.ok(failedText.includes(DEAD), failedText);
      const reason = withDead.failed.find((f) => f.name === DEAD).reason;
      assert.ok(reason && failedText.includes(reason), `the reason is shown: ${failedText}`);
      assert.ok(await page.locator('#hits li.hit').count() > 0, 'the live stores still answer');
      // The pill says two of the three answered, in the failing colour, naming the dead store.
      assert.equal(withDead.stores_searched.length, 2);
      await checkAnsweredPill(page, withDead);
      await shot(page, 'desktop-5-search-failed');

      // Remove it with ✕, after a confirm.
      await page.getByRole('tab', { name: 'Stores' }).click();
      let confirmText = '';
      page.once('dialog', (dialog) => { confirmText = dialog.message(); dialog.accept(); });
      const removed = waitForApi(page, 'DELETE', `/stores/${DEAD}`);
      // by keyboard: focus the ✕ and press Enter
      await deadCard.getByRole('button', { name: `Remove store ${DEAD}` }).focus();
      await page.keyboard.press('Enter');
      assert.equal((await removed).status(), 200);
      assert.ok(confirmText.includes(DEAD), `the confirm names the store: ${confirmText}`);
      await deadCard.waitFor({ state: 'detached' });
      await page.locator('#pill', { hasText: 'fanning: 2/2' }).waitFor();
      assert.equal(await roster.count(), 2);

      // ---- Overview: counts and the merge, explained.
      await page.getByRole('tab', { name: 'Overview' }).click();
      await page.locator('#ov-k', { hasText: '60' }).waitFor();
      assert.equal(await page.locator('#ov-active').textContent(), '2');
      assert.equal(await page.locator('#ov-configured').textContent(), '2');
      assert.equal(await page.locator('#ov-n').textContent(), '10');
      const explain = await page.locator('#panel-overview .explain').innerText();
      assert.ok(explain.includes('weight / (k + rank)'));
      assert.match(explain, /floor/i);
      assert.match(explain, /not magnitudes/i);
      await shot(page, 'desktop-6-overview');

      // The ⟳ button reloads the roster.
      const reloaded = waitForApi(page, 'GET', '/stores', 200);
      await page.getByRole('button', { name: 'Reload' }).click();
      await reloaded;

      page.assertClean();
    } finally {
      await context.close();
    }
  });

  test('narrow screen (390 px): every tab fits and works', { timeout: TEST_MS }, async () => {
    const { context, page } = await openPage({ width: 390, height: 844 });
    try {
      await page.goto(`${demo.url}/viewer/`); // the trailing-slash address works the same
      await page.locator('#pill', { hasText: 'fanning: 2/2' }).waitFor();
      const answer = await search(page, 'backup');
      await page.locator('#hits li.hit').first().waitFor();
      await checkAnsweredPill(page, answer);
      await noHorizontalScroll(page);
      await shot(page, 'narrow-1-search');

      await page.getByRole('tab', { name: 'Stores' }).click();
      await page.locator('#roster li.store').nth(1).waitFor();
      await page.getByRole('button', { name: '+ Add store' }).click();
      await page.locator('#add-form').getByLabel('Name').waitFor({ state: 'visible' });
      await noHorizontalScroll(page);
      await shot(page, 'narrow-2-stores');

      await page.getByRole('tab', { name: 'Overview' }).click();
      await page.locator('#ov-k', { hasText: '60' }).waitFor();
      await noHorizontalScroll(page);
      await shot(page, 'narrow-3-overview');
      page.assertClean();
    } finally {
      await context.close();
    }
  });
});

// ---- with a token -------------------------------------------------------------------------------

describe('The Bridge against a demo that requires a bearer token', () => {
  let demo;
  before(async () => { demo = await startDemo({ SEREN_SCC_BEARER_TOKEN: TOKEN }); });
  after(async () => { if (demo) await demo.stop(); });

  test('asks for the token on the first gated call, then works', { timeout: TEST_MS }, async () => {
    const { context, page } = await openPage();
    try {
      // The page loads without a token; its first gated call (GET /stores) answers 401.
      page.expectHttpError(401, '/stores');
      const gated = waitForApi(page, 'GET', '/stores', 401);
      const response = await page.goto(`${demo.url}/viewer`);
      assert.equal(response.status(), 200);
      await gated;
      const dialog = page.getByRole('dialog', { name: 'Bearer token' });
      await dialog.waitFor({ state: 'visible' });
      assert.ok((await dialog.innerText()).includes('needs a bearer token'));
      const input = dialog.getByLabel('Token');
      assert.ok(await input.evaluate((node) => node === document.activeElement), 'the token field has focus');
      await shot(page, 'desktop-7-token-prompt');

      // A wrong token is refused and the prompt comes back, saying so.
      page.expectHttpError(401, '/stores');
      const refused = waitForApi(page, 'GET', '/stores', 401);
      await input.fill('not-the-token');
      await input.press('Enter');
      await refused;
      await dialog.locator('#token-why', { hasText: 'refused' }).waitFor();

      // The right one: the retried call goes through with the bearer header, and the page works.
      const accepted = waitForApi(page, 'GET', '/stores', 200);
      await input.fill(TOKEN);
      await dialog.getByRole('button', { name: 'Save' }).click();
      const ok = await accepted;
      assert.equal(ok.request().headers().authorization, `Bearer ${TOKEN}`);
      await dialog.waitFor({ state: 'hidden' });
      await page.locator('#pill', { hasText: 'fanning: 2/2' }).waitFor();
      assert.equal(await page.evaluate(() => localStorage.getItem('seren_token')), TOKEN);

      const searched = page.waitForRequest((request) => new URL(request.url()).pathname === '/search');
      const answer = await search(page, 'rust');
      assert.equal((await searched).headers().authorization, `Bearer ${TOKEN}`);
      assert.ok(answer.hits.length > 0);
      await page.locator('#hits li.hit').first().waitFor();

      // A reload keeps the token (localStorage) and needs no prompt.
      await page.reload();
      await page.locator('#pill', { hasText: 'fanning: 2/2' }).waitFor();
      assert.equal(await dialog.isVisible(), false);

      // Forgetting the token and searching brings the prompt back instead of failing silently.
      await page.getByRole('button', { name: /token/ }).click();
      await dialog.waitFor({ state: 'visible' });
      await dialog.getByRole('button', { name: 'Forget' }).click();
      await dialog.waitFor({ state: 'hidden' });
      assert.equal(await page.evaluate(() => localStorage.getItem('seren_token')), null);
      page.expectHttpError(401, '/search');
      const denied = waitForApi(page, 'POST', '/search', 401);
      await page.getByLabel('Query', { exact: true }).fill('rust');
      await page.getByLabel('Query', { exact: true }).press('Enter');
      await denied;
      await dialog.waitFor({ state: 'visible' });
      await page.locator('#search-notices .notice', { hasText: 'bearer token' }).waitFor();
      const retried = waitForApi(page, 'POST', '/search', 200);
      await dialog.getByLabel('Token').fill(TOKEN);
      await dialog.getByLabel('Token').press('Enter');
      await retried;
      await page.locator('#hits li.hit').first().waitFor();

      page.assertClean();
    } finally {
      await context.close();
    }
  });
});

// ---- the packet: a token budget, edges and the knobs that shape them -----------------------------

// The demo replaces `stores` with its two sample stores; these knobs turn on 5.3.0's packet shaping
// (quota, authority, satellite and topic edges; `hops: 1` is no extra round).
const PACKET_CONFIG = `federation:
  authority_margin: 0.035
  min_per_store: 1
  edges_enabled: true
  edge_budget: 3
  satellite_edges_enabled: true
  satellite_budget: 3
  hops: 1
`;
const HIT_FIELDS = ['base_relevance', 'content', 'id', 'metadata', 'native_score', 'raw_distance', 'score', 'store', 'store_rank'];
const EDGE_BADGES = '#hits [data-kind="satellite-edge"], #hits [data-kind="topic-edge"]';

function isEdge(hit) {
  return typeof hit.metadata?.source === 'string' && hit.metadata.source.endsWith('-edge');
}

describe('The Bridge shows the packet (a demo with a quota, authority and edges)', () => {
  let demo;
  let dir;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'scc-e2e-packet-'));
    const config = path.join(dir, 'packet.yaml');
    writeFileSync(config, PACKET_CONFIG);
    demo = await startDemo({}, ['-c', config]);
  });
  after(async () => {
    if (demo) await demo.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('a token budget in the page, the cost in the header, edges badged; a bad budget is refused', { timeout: TEST_MS }, async () => {
    // GET /stores reports the knobs from the file, and no default budget.
    const response = await fetch(`${demo.url}/stores`);
    assert.equal(response.status, 200);
    const roster = await response.json();
    assert.equal(roster.budget_tokens, null);
    assert.equal(roster.authority_margin, 0.035);
    assert.equal(roster.min_per_store, 1);
    assert.equal(roster.edges_enabled, true);
    assert.equal(roster.edge_budget, 3);
    assert.equal(roster.satellite_edges_enabled, true);
    assert.equal(roster.satellite_budget, 3);
    assert.equal(roster.hops, 1);
    for (const key of ['fetch_multiplier', 'hop_terms', 'hop_budget']) assert.equal(typeof roster[key], 'number', `GET /stores has ${key}`);
    assert.ok(Array.isArray(roster.supported_knobs) && roster.supported_knobs.includes('budget_tokens'), `supported_knobs: ${roster.supported_knobs}`);

    const { context, page } = await openPage();
    try {
      assert.equal((await page.goto(`${demo.url}/viewer`)).status(), 200);
      await page.locator('#pill', { hasText: 'fanning: 2/2' }).waitFor();
      // The roster has been drawn once its shaping line exists; the empty budget field then says
      // what empty means here: no budget.
      await page.locator('#stores-shaping [data-knob="min_per_store"]').waitFor({ state: 'attached' });
      const budgetField = page.getByLabel('Token budget', { exact: true });
      assert.equal(await budgetField.getAttribute('placeholder'), 'none');
      assert.equal(await budgetField.getAttribute('min'), '1');

      // ---- A search with a budget of 800: the request carries it, the answer keeps to it.
      const sent = page.waitForRequest((request) => request.method() === 'POST' && new URL(request.url()).pathname === '/search');
      const answer = await search(page, 'cuda xavier', undefined, 800);
      const sentBody = (await sent).postDataJSON();
      assert.equal(sentBody.budget_tokens, 800);
      assert.equal(sentBody.explain, true, 'the viewer always asks why');
      assert.equal('stores' in sentBody, false, 'every store is searched: no filter is sent');
      assert.equal(answer.budget_tokens, 800);
      assert.equal(typeof answer.tokens, 'number');
      assert.ok(answer.tokens >= 1 && answer.tokens <= 800, `the packet costs ${answer.tokens} tokens, over its budget of 800`);
      assert.ok(answer.hits.length > 0);
      for (const hit of answer.hits) {
        // Its nine fields, and the explain the viewer asked for (from a callosum that explains).
        const { explain, ...fields } = hit;
        assert.deepEqual(Object.keys(fields).sort(), HIT_FIELDS, `a hit keeps its nine fields: ${JSON.stringify(hit)}`);
        assert.ok(explain === undefined || (explain && typeof explain === 'object'), JSON.stringify(hit));
        if (hit.score === 0) assert.ok(isEdge(hit), `a hit scored 0 is an edge: ${JSON.stringify(hit)}`);
      }
      assert.ok(answer.hits.some((hit) => ['satellite-edge', 'topic-edge'].includes(hit.metadata?.source)),
        `a satellite or topic edge: ${answer.hits.map((hit) => hit.metadata?.source ?? '-').join(', ')}`);

      // The header shows what the page cost, of what budget.
      const cost = page.locator('#search-status [data-testid="page-tokens"]');
      const costText = (await cost.textContent()).trim();
      assert.match(costText, /of 800/);
      const shown = Number(/\d+/.exec(costText)[0]);
      assert.ok(shown <= 800, costText);
      assert.equal(costText, `${answer.tokens} of 800 tokens`);

      // Every card: ranked hits with their rank and score, edges and hops with their own badge.
      const cards = page.locator('#hits li.hit');
      assert.equal(await cards.count(), answer.hits.length);
      assert.ok(await page.locator(EDGE_BADGES).count() >= 1, 'a satellite-edge or topic-edge badge');
      for (const [index, hit] of answer.hits.entries()) {
        const card = cards.nth(index);
        const meta = hit.metadata || {};
        const prov = await card.locator('.prov').innerText();
        if (meta.source === 'satellite-edge') {
          assert.equal(await card.locator('[data-kind="satellite-edge"]').textContent(), `satellite of ${meta.edge_of}`);
        } else if (meta.source === 'supersedes-edge') {
          assert.equal(await card.locator('[data-kind="supersedes-edge"]').textContent(), `superseded by ${meta.superseded_by ?? meta.edge_of}`);
        } else if (meta.source === 'topic-edge') {
          const badge = await card.locator('[data-kind="topic-edge"]').textContent();
          assert.ok(badge.startsWith('topic edge'), badge);
          for (const topic of meta.matched_topics ?? []) assert.ok(badge.includes(topic), `${badge} names ${topic}`);
        }
        if (isEdge(hit)) {
          assert.match(prov, /rrf\s*—/, `an edge shows no score: ${prov}`);
          assert.equal(await card.locator('.rank').count(), 0, 'an edge has no rank badge');
        } else {
          assert.equal(await card.locator('.rank').textContent(), `#${hit.store_rank}`);
          assert.doesNotMatch(prov, /rrf\s*—/, `a ranked hit shows its score: ${prov}`);
        }
        if (typeof meta.hop === 'number') {
          const hop = card.locator('[data-kind="hop"]');
          assert.equal(await hop.textContent(), `hop ${meta.hop}`);
          assert.ok((await hop.getAttribute('title')).includes(meta.hop_bridge), 'the bridge is the hop badge\u2019s tooltip');
        }
        if (!isEdge(hit) && meta.matched_via && typeof meta.matched_via === 'object') {
          assert.equal(await card.locator('[data-kind="matched-via"]').textContent(), `found through ${meta.matched_via.id}`);
        }
      }
      assert.doesNotMatch(await page.locator('#hits').innerText(), /null|undefined|NaN|\[object/);
      await noHorizontalScroll(page);
      await shot(page, 'desktop-8-packet');

      // ---- A bad budget is refused in the page, with a message, and nothing is sent.
      let searches = 0;
      page.on('request', (request) => { if (new URL(request.url()).pathname === '/search') searches += 1; });
      for (const bad of ['0', '-5', '2.5']) {
        await budgetField.fill(bad);
        await page.getByLabel('Query', { exact: true }).press('Enter');
        await page.locator('#search-status.error', { hasText: `not \u201c${bad}\u201d` }).waitFor();
        assert.match(await page.locator('#search-status').innerText(), /budget/i);
        assert.equal(await budgetField.getAttribute('aria-invalid'), 'true');
      }
      assert.equal(await cards.count(), answer.hits.length, 'the last answer stays on the page');
      await shot(page, 'desktop-9-packet-bad-budget');

      // An empty budget sends none: the answer says null, and the header a bare cost. The request
      // counter has seen every request by the time this answer is in, so 1 means the bad ones sent none.
      await budgetField.fill('');
      const plain = page.waitForRequest((request) => request.method() === 'POST' && new URL(request.url()).pathname === '/search');
      const unbudgeted = await search(page, 'cuda xavier');
      assert.equal(searches, 1, 'only the valid search was sent');
      assert.equal('budget_tokens' in (await plain).postDataJSON(), false);
      assert.equal(await budgetField.getAttribute('aria-invalid'), null);
      assert.equal(unbudgeted.budget_tokens, null);
      assert.equal(typeof unbudgeted.tokens, 'number');
      assert.equal((await cost.textContent()).trim(), `${unbudgeted.tokens} tokens`);

      // ---- The shaping knobs, on the Overview and on the Stores tab.
      await page.getByRole('tab', { name: 'Overview' }).click();
      const shaping = page.locator('#ov-shaping');
      await shaping.waitFor();
      const knob = async (key) => (await shaping.locator(`[data-knob="${key}"] dd`).textContent()).trim();
      assert.equal(await knob('budget_tokens'), 'none');
      assert.equal(await knob('min_per_store'), '1 per store');
      assert.equal(await knob('authority_margin'), '0.035');
      assert.equal(await knob('edges'), 'on · 3');
      assert.equal(await knob('satellites'), 'on · 3');
      assert.match(await knob('hops'), /^1 \(off\) · \d+ terms · budget \d+$/);
      await shot(page, 'desktop-10-packet-overview');
      await page.getByRole('tab', { name: 'Stores' }).click();
      await page.locator('#stores-shaping [data-knob="min_per_store"]').waitFor();
      assert.match(await page.locator('#stores-shaping').innerText(), /quota\s*1 per store/);

      page.assertClean();
    } finally {
      await context.close();
    }
  });

  test('narrow screen (390 px): the budget field, the cost and the edge badges fit', { timeout: TEST_MS }, async () => {
    const { context, page } = await openPage({ width: 390, height: 844 });
    try {
      await page.goto(`${demo.url}/viewer`);
      await page.locator('#pill', { hasText: 'fanning: 2/2' }).waitFor();
      const answer = await search(page, 'cuda xavier', undefined, 800);
      assert.equal(answer.budget_tokens, 800);
      await page.locator('#search-status [data-testid="page-tokens"]', { hasText: 'of 800' }).waitFor();
      await page.locator(EDGE_BADGES).first().waitFor();
      await noHorizontalScroll(page);
      await shot(page, 'narrow-4-packet');

      await page.getByRole('tab', { name: 'Overview' }).click();
      await page.locator('#ov-shaping [data-knob="edges"]').waitFor();
      await noHorizontalScroll(page);
      await shot(page, 'narrow-5-packet-overview');
      page.assertClean();
    } finally {
      await context.close();
    }
  });
});

// ---- an mcp store: another callosum, fanned through its MCP search tool --------------------------

// The form's mapping fields for an mcp store, by their labels.
const MCP_FIELDS = ['Preset', 'Tool', 'Content'];
const PRESETS = ['none', 'server-memory', 'seren-loci', 'seren-memory', 'callosum', 'basic-memory', 'mcp-server-qdrant', 'chroma-mcp', 'graphiti-facts', 'graphiti-nodes', 'mem0'];
const CUDA = 'that CUDA thing on the Xavier';

/** POST /search from Node (no Origin: not a browser). */
async function searchFromNode(base, query, n) {
  const response = await fetch(`${base}/search`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query, n_results: n }),
  });
  assert.equal(response.status, 200);
  return response.json();
}

/** Fills the add-store form of `page` (already open) for an mcp store. */
async function fillMcpForm(page, { name, url, preset, tool, content }) {
  const form = page.locator('#add-form');
  await form.getByLabel('Name').fill(name);
  await form.getByLabel('Type').selectOption('mcp');
  await form.getByLabel('URL').fill(url);
  await form.getByLabel('Preset').selectOption(preset ?? '');
  await form.getByLabel('Tool').fill(tool ?? '');
  await form.getByLabel('Content').fill(content ?? '');
}

function waitForStoresPost(page) {
  return page.waitForRequest((request) => request.method() === 'POST' && new URL(request.url()).pathname === '/stores');
}

describe('The Bridge fans another callosum as an mcp store (two demos)', () => {
  let outer;
  let inner;
  let mcpUrl;
  before(async () => {
    // Two demos, each on its own ephemeral port with its own sample stores; the outer one fans the
    // inner one's MCP `search` tool over streamable HTTP.
    [outer, inner] = await Promise.all([startDemo(), startDemo()]);
    mcpUrl = `${inner.url}/mcp`;
  });
  after(async () => {
    await Promise.all([outer?.stop(), inner?.stop()]);
  });

  test('add store: type mcp shows preset, tool and content; a bad one shows the server\u2019s words; preset callosum fans the inner demo', { timeout: TEST_MS }, async () => {
    const { context, page } = await openPage();
    try {
      assert.equal((await page.goto(`${outer.url}/viewer`)).status(), 200);
      await page.locator('#pill', { hasText: 'fanning: 2/2' }).waitFor();
      await page.getByRole('tab', { name: 'Stores' }).click();
      await page.locator('#roster li.store').nth(1).waitFor();
      await page.getByRole('button', { name: '+ Add store' }).click();
      const form = page.locator('#add-form');
      await form.getByLabel('Name').waitFor({ state: 'visible' });
      const types = await page.locator('#f-type option').allTextContents();
      assert.ok(types.includes('mcp'), `types from the server: ${types}`);

      // Another type: no mcp fields, the usual url placeholder.
      await form.getByLabel('Type').selectOption('seren_memory');
      for (const label of MCP_FIELDS) assert.equal(await form.getByLabel(label).isVisible(), false, `${label} is hidden for seren_memory`);
      const plainPlaceholder = await form.getByLabel('URL').getAttribute('placeholder');
      assert.notEqual(plainPlaceholder, 'http://localhost:7424/mcp');

      // mcp: the three fields show, labelled and hinted, and the url placeholder is an MCP endpoint.
      await form.getByLabel('Type').selectOption('mcp');
      for (const label of MCP_FIELDS) await form.getByLabel(label).waitFor({ state: 'visible' });
      assert.equal(await form.getByLabel('URL').getAttribute('placeholder'), 'http://localhost:7424/mcp');
      assert.deepEqual(await form.getByLabel('Preset').locator('option').allTextContents(), PRESETS);
      assert.equal(await form.getByLabel('Preset').inputValue(), '', 'no preset by default');
      assert.equal(await form.getByLabel('Preset').getAttribute('aria-describedby'), 'f-preset-hint');
      assert.equal(await page.locator('#f-preset-hint').textContent(), 'fills the tool and mapping of a known server');
      assert.equal(await page.locator('#f-content-hint').textContent(), 'pointer or {/pointer} template');
      await noHorizontalScroll(page);

      // Neither a preset nor a tool: the server's 400 text, and no blank mapping key was sent.
      page.expectHttpError(400, '/stores');
      await fillMcpForm(page, { name: 'inner', url: mcpUrl });
      let sent = waitForStoresPost(page);
      let answered = waitForApi(page, 'POST', '/stores');
      await page.getByRole('button', { name: 'Add store', exact: true }).click();
      assert.deepEqual((await sent).postDataJSON(), { name: 'inner', type: 'mcp', url: mcpUrl, weight: 1, floor: 0 });
      assert.equal((await answered).status(), 400);
      await page.locator('#add-error', { hasText: 'tool is required (the MCP tool to call), or a preset: server-memory, seren-loci, seren-memory, callosum' }).waitFor();
      await shot(page, 'desktop-11-mcp-add-error');

      // A content template that does not parse: the server says where, and the content was sent.
      page.expectHttpError(400, '/stores');
      await fillMcpForm(page, { name: 'inner', url: mcpUrl, preset: 'callosum', content: '{/store' });
      sent = waitForStoresPost(page);
      answered = waitForApi(page, 'POST', '/stores');
      await form.getByLabel('Content').press('Enter');
      assert.equal((await sent).postDataJSON().content, '{/store');
      assert.equal((await answered).status(), 400);
      await page.locator('#add-error', { hasText: /^content: the '\{' at character 1 is never closed/ }).waitFor();

      // Preset callosum, no tool and no content: Enter in a field submits; only the preset is sent.
      await fillMcpForm(page, { name: 'inner', url: mcpUrl, preset: 'callosum' });
      assert.equal(await form.getByLabel('Tool').getAttribute('placeholder'), 'search (from the preset)');
      await shot(page, 'desktop-12-mcp-add-form');
      sent = waitForStoresPost(page);
      answered = waitForApi(page, 'POST', '/stores');
      await form.getByLabel('Tool').press('Enter');
      assert.deepEqual((await sent).postDataJSON(), { name: 'inner', type: 'mcp', url: mcpUrl, weight: 1, floor: 0, preset: 'callosum' });
      assert.equal((await answered).status(), 200);
      const card = page.locator('#roster li.store[data-store="inner"]');
      await card.waitFor();
      assert.equal(await card.getAttribute('data-status'), 'active');
      assert.equal(await card.locator('.badge').textContent(), 'mcp');
      assert.equal(await card.locator('.store-url').textContent(), mcpUrl);
      assert.match(await card.locator('.facts').innerText(), /status\s*active/);
      await page.locator('#pill', { hasText: 'fanning: 3/3' }).waitFor();
      await page.locator('#stores-notices .notice.success', { hasText: 'inner' }).waitFor();
      assert.equal(await form.isVisible(), false, 'the form closes after an add');

      // Reopened, the form is back to its default type, without the mcp fields; values typed into
      // them while the type was mcp are not sent for another type (the 409 is the duplicate name,
      // not "preset is a setting of mcp stores").
      await page.getByRole('button', { name: '+ Add store' }).click();
      assert.equal(await form.getByLabel('Type').inputValue(), 'seren_memory');
      for (const label of MCP_FIELDS) assert.equal(await form.getByLabel(label).isVisible(), false, `${label} is hidden again`);
      assert.equal(await form.getByLabel('URL').getAttribute('placeholder'), plainPlaceholder);
      await fillMcpForm(page, { name: 'inner', url: mcpUrl, preset: 'callosum', tool: 'stray', content: '/stray' });
      await form.getByLabel('Type').selectOption('seren_callosum');
      await form.getByLabel('URL').fill(inner.url);
      page.expectHttpError(409, '/stores');
      sent = waitForStoresPost(page);
      answered = waitForApi(page, 'POST', '/stores');
      await page.getByRole('button', { name: 'Add store', exact: true }).click();
      assert.deepEqual(Object.keys((await sent).postDataJSON()).sort(), ['floor', 'name', 'type', 'url', 'weight']);
      assert.equal((await answered).status(), 409);
      await page.locator('#add-error', { hasText: "a store named 'inner' already exists" }).waitFor();
      await page.getByRole('button', { name: 'Cancel' }).click();

      // ---- Search: the inner demo's fused hits, as the store `inner`, beside the outer's own.
      const answer = await search(page, CUDA, 10);
      assert.deepEqual([...answer.stores_searched].sort(), ['episodic', 'facts', 'inner']);
      assert.deepEqual(answer.failed, []);
      const innerHits = answer.hits.filter((hit) => hit.store === 'inner');
      assert.ok(innerHits.length >= 1, `hits from inner: ${answer.hits.map((hit) => hit.store).join(', ')}`);
      assert.ok(answer.hits.some((hit) => hit.store === 'episodic') && answer.hits.some((hit) => hit.store === 'facts'),
        'the outer demo\u2019s own stores still answer');
      // Each inner hit is the inner demo's own fused hit at that rank: same id and content, and its
      // metadata names the inner hit's store.
      const direct = await searchFromNode(inner.url, CUDA, 20);
      for (const hit of innerHits) {
        const original = direct.hits[hit.store_rank - 1];
        assert.ok(original, `the inner demo has a hit at rank ${hit.store_rank}`);
        assert.equal(hit.id, original.id);
        assert.equal(hit.content, original.content);
        assert.equal(hit.metadata.store, original.store);
        assert.ok(['episodic', 'facts'].includes(hit.metadata.store), JSON.stringify(hit.metadata));
      }

      // The cards: badged `inner` in the colour of any other type, with rank and provenance.
      const cards = page.locator('#hits li.hit[data-store="inner"]');
      assert.equal(await cards.count(), innerHits.length);
      assert.ok(await page.locator('#hits li.hit[data-store="episodic"]').count() >= 1);
      assert.ok(await page.locator('#hits li.hit[data-store="facts"]').count() >= 1);
      const first = cards.first();
      const firstHit = innerHits[0];
      assert.equal(await first.locator('.badge').textContent(), 'inner');
      assert.ok(await first.locator('.badge').evaluate((node) => node.classList.contains('t-other')));
      assert.equal(await first.locator('.rank').textContent(), `#${firstHit.store_rank}`);
      assert.equal(await first.locator('.content').textContent(), firstHit.content);
      const prov = await first.locator('.prov').innerText();
      for (const label of ['rrf', 'rel', 'native', 'd=']) assert.ok(prov.includes(label), `provenance shows ${label}: ${prov}`);
      assert.match(prov, /d=\s*—/, 'an mcp hit has no raw distance');
      // Its metadata: the inner hit's store (and the rest of the inner hit) on demand.
      await first.locator('details.meta summary').click();
      const meta = first.locator('details.meta dl');
      await meta.waitFor({ state: 'visible' });
      const metaText = await meta.innerText();
      assert.ok(metaText.includes(firstHit.id), metaText);
      assert.match(metaText, new RegExp(`store\\s*${firstHit.metadata.store}`), metaText);
      assert.doesNotMatch(await page.locator('#hits').innerText(), /null|undefined|NaN|\[object/);
      await noHorizontalScroll(page);
      await shot(page, 'desktop-13-mcp-search');

      // The inner demo was untouched: its own roster is its two sample stores.
      assert.deepEqual(await rosterNames(inner.url), ['episodic', 'facts']);
      page.assertClean();
    } finally {
      await context.close();
    }
  });

  test('narrow screen (390 px): the mcp fields and an mcp hit fit', { timeout: TEST_MS }, async () => {
    // Self-contained: add `inner` over REST when the test above did not.
    if (!(await rosterNames(outer.url)).includes('inner')) {
      const response = await fetch(`${outer.url}/stores`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'inner', type: 'mcp', url: mcpUrl, preset: 'callosum' }),
      });
      assert.equal(response.status, 200, await response.text());
    }
    const { context, page } = await openPage({ width: 390, height: 844 });
    try {
      await page.goto(`${outer.url}/viewer`);
      await page.locator('#pill', { hasText: 'fanning: 3/3' }).waitFor();
      const answer = await search(page, CUDA, 10);
      assert.ok(answer.hits.some((hit) => hit.store === 'inner'));
      const card = page.locator('#hits li.hit[data-store="inner"]').first();
      await card.locator('details.meta summary').click();
      await card.locator('details.meta dl').waitFor({ state: 'visible' });
      await noHorizontalScroll(page);
      await shot(page, 'narrow-6-mcp-search');

      await page.getByRole('tab', { name: 'Stores' }).click();
      await page.locator('#roster li.store[data-store="inner"]').waitFor();
      await page.getByRole('button', { name: '+ Add store' }).click();
      await page.locator('#add-form').getByLabel('Type').selectOption('mcp');
      for (const label of MCP_FIELDS) await page.locator('#add-form').getByLabel(label).waitFor({ state: 'visible' });
      await noHorizontalScroll(page);
      await shot(page, 'narrow-7-mcp-add-form');
      page.assertClean();
    } finally {
      await context.close();
    }
  });
});

// ---- a page from another origin ---------------------------------------------------------------

/**
 * Serves one attacker page on 127.0.0.2 (another origin on loopback, as a site in another tab would
 * be) that targets `target`. Resolves to the page's url and a stop function.
 */
function serveAttacker(target) {
  const page = `<!doctype html><meta charset="utf-8"><title>attacker</title>
<iframe name="sink" id="sink"></iframe>
<form id="csrf" method="POST" action="${target}/stores" enctype="text/plain" target="sink">
  <input name='{"name":"attacker-form","type":"seren_memory","url":"http://127.0.0.2:9","x":"' value='"}'>
</form>
<script>
const T = ${JSON.stringify(target)};
window.__results = {};
const store = (name) => JSON.stringify({ name, type: 'seren_memory', url: 'http://127.0.0.2:9' });
async function attack() {
  const r = window.__results;
  // 1. A "simple" request: no preflight, the response is opaque, but the body would arrive.
  try {
    await fetch(T + '/stores', { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: store('attacker-nocors') });
    r.nocors = 'sent';
  } catch (e) { r.nocors = 'error: ' + e.message; }
  // 2. Reading a search answer (needs CORS: a preflight first).
  try {
    const response = await fetch(T + '/search', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: 'jetpack' }) });
    r.search = 'read: ' + (await response.text());
  } catch (e) { r.search = 'blocked'; }
  // 3. Reading the roster with a plain GET (no preflight; the answer must not be readable).
  try {
    const response = await fetch(T + '/stores');
    r.stores = 'read: ' + (await response.text());
  } catch (e) { r.stores = 'blocked'; }
  // 4. A form post with a JSON-looking text/plain body, into a hidden frame.
  await new Promise((resolve) => {
    document.getElementById('sink').addEventListener('load', resolve, { once: true });
    document.getElementById('csrf').submit();
  });
  r.form = 'submitted';
  r.done = true;
}
attack();
</script>`;
  const server = http.createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(page);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.2', () => {
      resolve({ url: `http://127.0.0.2:${server.address().port}/`, stop: () => new Promise((done) => server.close(done)) });
    });
  });
}

/** GET /stores from Node (no Origin: not a browser), as the names in the roster. */
async function rosterNames(base) {
  const response = await fetch(`${base}/stores`);
  assert.equal(response.status, 200);
  return (await response.json()).stores.map((s) => s.name);
}

describe('A page on another origin cannot use the callosum', () => {
  let demo;
  let overlay;
  before(async () => {
    overlay = path.join(mkdtempSync(path.join(os.tmpdir(), 'scc-e2e-overlay-')), 'runtime-stores.json');
    demo = await startDemo({ SEREN_SCC_RUNTIME_STORES: overlay, SEREN_SCC_LOG: 'info,seren_corpus_callosum=debug' });
  });
  after(async () => {
    if (demo) await demo.stop();
    rmSync(path.dirname(overlay), { recursive: true, force: true });
  });

  test('no-cors fetch, text/plain form and cross-origin reads are refused; the viewer still works', { timeout: TEST_MS }, async () => {
    const before = await rosterNames(demo.url);
    const attacker = await serveAttacker(demo.url);
    // A plain context: routing (SCC_VIEWER_FROM_DISK) would have Playwright answer CORS preflights
    // itself, and the preflight is what this test watches. The viewer below is the binary's own.
    const context = await browser.newContext();
    try {
      const page = await context.newPage();
      page.setDefaultTimeout(UI_MS);
      await page.goto(attacker.url);
      await page.waitForFunction(() => window.__results && window.__results.done, null, { timeout: UI_MS });
      const results = await page.evaluate(() => window.__results);

      // The requests reached the callosum (the browser did not stop them for us) and were refused:
      // its own request log (SEREN_SCC_LOG=debug) says what came and what it answered, a line
      // written just after each answer: waited for.
      const requests = (log) => log
        .map((line) => /request method=(\S+) path='?([^\s']+)'? status=(\d+)/.exec(line)) // path quoted (text::escaped) or bare
        .filter(Boolean)
        .map(([, method, where, status]) => `${method} ${where} ${status}`);
      await demo.waitForLog((log) => {
        const lines = requests(log);
        return lines.filter((s) => s === 'POST /stores 403').length >= 2
          && lines.includes('OPTIONS /search 403') && lines.includes('GET /stores 403');
      }, 'line for each refused request');
      const seen = requests(demo.log);
      assert.equal(seen.filter((s) => s === 'POST /stores 403').length, 2, `the no-cors and form posts: ${seen.join(', ')}`);
      assert.ok(seen.includes('OPTIONS /search 403'), `the preflight was refused: ${seen.join(', ')}`);
      assert.ok(!seen.some((s) => s.startsWith('POST /search')), 'no search was sent after the refused preflight');
      assert.ok(seen.includes('GET /stores 403'), seen.join(', '));
      // Nothing was read.
      assert.equal(results.search, 'blocked');
      assert.equal(results.stores, 'blocked');
      // Nothing was added: the live roster and the overlay file are as they were.
      assert.deepEqual(await rosterNames(demo.url), before);
      assert.ok(!existsSync(overlay) || JSON.parse(readFileSync(overlay, 'utf8')).length === 0, 'the overlay is unchanged');
      await shot(page, 'attacker-page');

      // The viewer on its own origin still searches and adds (then removes) a store.
      const viewer = await context.newPage();
      viewer.setDefaultTimeout(UI_MS);
      await viewer.goto(`${demo.url}/viewer`);
      await viewer.locator('#pill', { hasText: 'fanning: 2/2' }).waitFor();
      const answer = await search(viewer, 'jetpack');
      assert.ok(answer.hits.length > 0);
      await viewer.getByRole('tab', { name: 'Stores' }).click();
      await viewer.getByRole('button', { name: '+ Add store' }).click();
      await viewer.locator('#add-form').getByLabel('Name').fill('same-origin');
      await viewer.locator('#add-form').getByLabel('Type').selectOption('seren_memory');
      await viewer.locator('#add-form').getByLabel('URL').fill('http://127.0.0.1:9');
      const added = waitForApi(viewer, 'POST', '/stores');
      await viewer.getByRole('button', { name: 'Add store', exact: true }).click();
      assert.equal((await added).status(), 200);
      await viewer.locator('#roster li.store[data-store="same-origin"]').waitFor();
      assert.ok((await rosterNames(demo.url)).includes('same-origin'));
      assert.deepEqual(JSON.parse(readFileSync(overlay, 'utf8')).map((s) => s.name), ['same-origin']);
    } finally {
      await context.close();
      await attacker.stop();
    }
  });
});

// ---- health and knobs: a failing store watched, and the live knobs turned -------------------------

/** A loopback port that nothing listens on: bound, read, closed. */
async function closedPort() {
  const server = net.createServer();
  await new Promise((resolve, reject) => { server.once('error', reject); server.listen(0, '127.0.0.1', resolve); });
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** GET `apiPath` from Node (no Origin: not a browser), as JSON; with `token` as its bearer. */
async function getJson(base, apiPath, token) {
  const response = await fetch(`${base}${apiPath}`, token ? { headers: { authorization: `Bearer ${token}` } } : undefined);
  assert.equal(response.status, 200, `GET ${apiPath} answered ${response.status}: ${await response.clone().text()}`);
  return response.json();
}

/** A knob's value as the Knobs tab writes it in its yaml and default columns. */
function knobText(value) {
  if (value === null || value === undefined) return 'none';
  if (value === true) return 'on';
  if (value === false) return 'off';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/** The yaml column: null there is a key the file does not set. */
function yamlText(value) {
  return value === null || value === undefined ? '—' : knobText(value);
}

/** Twiddled: live is not what the file gives (its value, or the default where it sets none). */
function isTwiddled(knob) {
  const file = knob.yaml === null || knob.yaml === undefined ? knob.default : knob.yaml;
  return knob.twiddled === true || JSON.stringify(knob.live ?? null) !== JSON.stringify(file ?? null);
}

/** Makes the page look hidden (or visible again) to its visibilitychange listener. */
async function setVisibility(page, hidden) {
  await page.evaluate((hide) => {
    if (hide) Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
    else delete document.visibilityState; // back to the real (visible) one
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);
}

const DOWN = 'down';

/** Scrolled to the very bottom, the last knob row is wholly between the sticky header and the Apply bar. */
async function lastKnobRowClearOfBar(page) {
  await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
  await page.waitForFunction(() => Math.ceil(window.scrollY + window.innerHeight) >= document.documentElement.scrollHeight);
  const row = await page.locator('#knobs-form tr[data-knob]').last().boundingBox();
  const bar = await page.locator('#knobs-form .apply-bar').boundingBox();
  const header = await page.locator('header.top').boundingBox();
  assert.ok(row.y + row.height <= bar.y, `the last knob row (${row.y}..${row.y + row.height}) ends above the Apply bar (from ${bar.y})`);
  assert.ok(row.y >= header.y + header.height, `the last knob row (from ${row.y}) is below the header (to ${header.y + header.height})`);
}

describe('The Bridge shows health and turns knobs (a demo with a failing store)', () => {
  let demo;
  before(async () => {
    demo = await startDemo();
    // A store at a port nothing listens on, added through the REST API: every call to it fails.
    const port = await closedPort();
    const response = await fetch(`${demo.url}/stores`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: DOWN, type: 'seren_loci', url: `http://127.0.0.1:${port}` }),
    });
    assert.equal(response.status, 200, await response.text());
  });
  after(async () => { if (demo) await demo.stop(); });

  test('health: the failing store is unhealthy with its reason, the others healthy; it refreshes itself, pauses when hidden, stops on another tab', { timeout: TEST_MS }, async () => {
    const { context, page } = await openPage();
    try {
      assert.equal((await page.goto(`${demo.url}/viewer`)).status(), 200);
      await page.locator('#pill', { hasText: 'fanning: 3/3' }).waitFor();
      const answer = await search(page, CUDA, 10);
      const failed = answer.failed.find((f) => f.name === DOWN);
      assert.ok(failed && failed.reason, `the search names ${DOWN} as failed: ${JSON.stringify(answer.failed)}`);
      assert.ok(answer.hits.length > 0, 'the live stores still answer');
      // The pill was 3/3 bound; now it says 2 of the 3 answered, in the failing colour, naming DOWN.
      assert.equal(answer.stores_searched.length, 2);
      await checkAnsweredPill(page, answer);

      // By keyboard: Overview, then ArrowRight to Health; it reads GET /health/stores at once.
      await page.getByRole('tab', { name: 'Overview' }).click();
      const loaded = waitForApi(page, 'GET', '/health/stores', 200);
      await page.getByRole('tab', { name: 'Overview' }).focus();
      await page.keyboard.press('ArrowRight');
      const healthTab = page.getByRole('tab', { name: 'Health' });
      assert.equal(await healthTab.getAttribute('aria-selected'), 'true');
      assert.ok(await healthTab.evaluate((node) => node === document.activeElement), 'the Health tab has focus');
      assert.ok(await page.getByRole('tabpanel', { name: 'Health' }).isVisible());
      const first = await (await loaded).json();

      // The failing store's card: unhealthy (or degraded), said in words, with its last error as text.
      const record = first.stores.find((s) => s.name === DOWN);
      assert.ok(record, `GET /health/stores lists ${DOWN}: ${JSON.stringify(first)}`);
      assert.ok(['unhealthy', 'degraded'].includes(record.health_status), JSON.stringify(record));
      assert.equal(record.last_error, failed.reason, 'the record\u2019s last error is the search\u2019s reason');
      const down = page.locator(`#health-list li[data-store="${DOWN}"]`);
      await down.waitFor();
      assert.equal(await down.getAttribute('data-health'), record.health_status);
      assert.match(await down.locator('[data-testid="health-state"]').innerText(), new RegExp(record.health_status));
      assert.equal(await down.locator('[data-testid="last-error"] .msg').textContent(), record.last_error);
      assert.match(await down.locator('.facts').innerText(), /success\s*0%\s*\(0\/1\)/);

      // The sample stores: healthy, no error, every latency in ms.
      for (const name of ['episodic', 'facts']) {
        const card = page.locator(`#health-list li[data-store="${name}"]`);
        assert.equal(await card.getAttribute('data-health'), 'healthy', name);
        assert.match(await card.locator('[data-testid="health-state"]').innerText(), /healthy/);
        assert.equal(await card.locator('[data-testid="last-error"]').count(), 0, `${name} has no error`);
        const facts = await card.locator('.facts').innerText();
        assert.match(facts, /success\s*100%/, facts);
        assert.match(facts, /(p50|avg)\s*[\d.]+ ms/, facts);
        assert.match(facts, /last\s*[\d.]+ ms/, facts);
        assert.match(facts, /max\s*[\d.]+ ms/, facts);
        assert.match(await card.locator('[data-testid="breaker"]').innerText(), /closed/);
      }
      // The counts at the top are the server's.
      for (const key of ['healthy', 'degraded', 'unhealthy', 'unknown']) {
        assert.equal(await page.locator(`#hc-${key}`).textContent(), String(first[key]), key);
      }
      assert.equal(first.healthy, 2);
      assert.doesNotMatch(await page.locator('#panel-health').innerText(), /null|undefined|NaN|\[object/);
      await shot(page, 'desktop-14-health');

      // It refreshes itself: two more failing searches (from Node) open the breaker, and the next
      // automatic refresh shows it open, with when it probes again.
      assert.equal(await page.locator('#panel-health').getAttribute('data-polling'), 'on');
      await page.locator('#health-updated', { hasText: 'refreshes every 5 s' }).waitFor();
      for (let i = 0; i < 2; i += 1) await searchFromNode(demo.url, CUDA, 10);
      const opened = (await getJson(demo.url, '/health/stores')).stores.find((s) => s.name === DOWN);
      assert.equal(opened.breaker, 'open', `three failures open the breaker: ${JSON.stringify(opened)}`);
      await page.locator(`#health-list li[data-store="${DOWN}"][data-breaker="open"]`).waitFor();
      assert.match(await down.locator('[data-testid="breaker"]').innerText(), /open · retries in \d+ s/);
      assert.equal(await down.getAttribute('data-health'), 'unhealthy');
      await shot(page, 'desktop-15-health-open');

      // The Refresh button asks at once.
      const manual = waitForApi(page, 'GET', '/health/stores', 200);
      await page.getByRole('button', { name: '⟳ Refresh' }).click();
      await manual;

      // A hidden page stops asking; visible again, it asks at once and carries on.
      await setVisibility(page, true);
      await page.locator('#panel-health[data-polling="paused"]').waitFor();
      await page.locator('#health-updated', { hasText: 'paused while the page is hidden' }).waitFor();
      const resumed = waitForApi(page, 'GET', '/health/stores', 200);
      await setVisibility(page, false);
      await resumed;
      await page.locator('#panel-health[data-polling="on"]').waitFor();

      // Another tab stops it.
      await page.getByRole('tab', { name: 'Search' }).click();
      assert.equal(await page.locator('#panel-health').getAttribute('data-polling'), 'off');
      page.assertClean();
    } finally {
      await context.close();
    }
  });

  test('knobs: where it comes from and the live values; a store weight applied moves the top hit; a bad value shows the server\u2019s 422 and changes nothing', { timeout: TEST_MS }, async () => {
    await getJson(demo.url, '/knobs'); // a callosum without GET /knobs fails here, plainly
    const { context, page } = await openPage();
    try {
      assert.equal((await page.goto(`${demo.url}/viewer`)).status(), 200);
      await page.locator('#pill', { hasText: /fanning: \d\/3/ }).waitFor();
      const before = await search(page, CUDA, 10);
      const top = before.hits[0].store;
      assert.ok(['episodic', 'facts'].includes(top), top);
      const other = top === 'facts' ? 'episodic' : 'facts';
      assert.ok(before.hits.some((hit) => hit.store === other), `${other} answers too`);

      // ---- The Knobs tab: where the settings come from.
      const loaded = waitForApi(page, 'GET', '/knobs', 200);
      await page.getByRole('tab', { name: 'Knobs' }).click();
      const knobs = await (await loaded).json();
      assert.equal(knobs.ok, true);
      await page.locator('#knobs-form').waitFor();
      const where = await page.locator('#knobs-where').innerText();
      assert.ok(where.includes(knobs.where.config_path), where);
      assert.ok(where.includes(knobs.where.overlay_path), where);
      assert.ok(where.includes(knobs.server.auth), `the token\u2019s source: ${where}`);
      assert.ok(where.includes(`${knobs.server.host}:${knobs.server.port}`), where);
      for (const name of knobs.where.env_overrides ?? []) assert.ok(where.includes(name), where);

      // The federation knobs: live (editable when settable), yaml, default, and the plain words.
      const fed = page.locator('#knobs-federation');
      for (const knob of knobs.federation) {
        const row = fed.locator(`tr[data-knob="${knob.key}"]`);
        assert.equal(await row.count(), 1, knob.key);
        const cells = row.locator('td');
        assert.equal((await cells.nth(1).textContent()).trim(), yamlText(knob.yaml), `${knob.key} yaml`);
        assert.equal((await cells.nth(2).textContent()).trim(), knobText(knob.default), `${knob.key} default`);
        if (knob.what) assert.ok((await row.innerText()).includes(knob.what), `${knob.key}: the plain words`);
        assert.equal(await row.locator('.tag.twiddled').count(), isTwiddled(knob) ? 1 : 0, `${knob.key} twiddled`);
        if (!knob.runtime_settable) continue;
        const input = page.getByLabel(knob.key, { exact: true });
        if (typeof knob.live === 'boolean') {
          assert.equal(await input.getAttribute('type'), 'checkbox', knob.key);
          assert.equal(await input.isChecked(), knob.live, knob.key);
        } else if (knob.key === 'fusion_mode') {
          assert.equal(await input.evaluate((node) => node.tagName), 'SELECT', `${knob.key} is a list to pick from`);
          assert.equal(await input.inputValue(), knob.live, knob.key);
        } else if (typeof knob.live === 'string') {
          assert.equal(await input.getAttribute('type'), 'text', knob.key);
          assert.equal(await input.inputValue(), knob.live, knob.key);
        } else {
          assert.equal(await input.getAttribute('type'), 'number', knob.key);
          assert.equal(await input.inputValue(), knob.live === null ? '' : String(knob.live), knob.key);
        }
      }
      // fusion_mode takes a fixed set of values (rrf alone, here): a select of them, by keyboard too.
      const fusion = knobs.federation.find((knob) => knob.key === 'fusion_mode');
      assert.ok(fusion && fusion.runtime_settable, 'fusion_mode is a live knob');
      const fusionSelect = page.getByRole('combobox', { name: 'fusion_mode', exact: true });
      assert.deepEqual(await fusionSelect.locator('option').evaluateAll((options) => options.map((o) => o.value)),
        fusion.choices ?? fusion.values ?? fusion.allowed ?? fusion.enum ?? ['rrf']);
      assert.equal(await fusionSelect.inputValue(), 'rrf');
      await fusionSelect.focus();
      await page.keyboard.press('ArrowDown');
      assert.equal(await fusionSelect.inputValue(), 'rrf');
      await fusionSelect.selectOption('rrf');
      await page.locator('#knobs-dirty', { hasText: 'no changes' }).waitFor();
      assert.equal(await page.locator('#knobs-federation tr[data-knob="fusion_mode"] input').count(), 0,
        'no text box for fusion_mode');

      const k = knobs.federation.find((knob) => knob.key === 'k');
      assert.ok(k && k.runtime_settable, 'k is a live knob');
      const kInput = page.getByLabel('k', { exact: true });

      // budget_tokens: null is an empty field, and emptying it again is no change.
      const budget = knobs.federation.find((knob) => knob.key === 'budget_tokens');
      if (budget && budget.runtime_settable && budget.live === null) {
        const field = page.getByLabel('budget_tokens', { exact: true });
        assert.equal(await field.getAttribute('placeholder'), 'none');
        await field.fill('500');
        await page.locator('#knobs-dirty', { hasText: '1 unapplied change' }).waitFor();
        await field.fill('');
        await page.locator('#knobs-dirty', { hasText: 'no changes' }).waitFor();
      }
      // A boolean is a checkbox; Reset drops the edit.
      const flag = knobs.federation.find((knob) => knob.runtime_settable && typeof knob.live === 'boolean');
      if (flag) {
        const box = page.getByLabel(flag.key, { exact: true });
        await box.focus();
        await page.keyboard.press('Space');
        assert.equal(await box.isChecked(), !flag.live);
        await page.locator('#knobs-dirty', { hasText: '1 unapplied change' }).waitFor();
        await fed.locator(`tr[data-knob="${flag.key}"].edited .tag.edited`).waitFor();
        await page.getByRole('button', { name: 'Reset' }).click();
        assert.equal(await box.isChecked(), flag.live);
        await page.locator('#knobs-dirty', { hasText: 'no changes' }).waitFor();
      }

      // Per store: weight and floor, labelled with the store's name.
      const storeKnobs = knobs.stores.find((s) => s.name === other);
      assert.ok(storeKnobs, `GET /knobs lists ${other}`);
      const weightKnob = storeKnobs.knobs.find((knob) => knob.key === 'weight');
      const weight = page.getByLabel(`${other} weight`, { exact: true });
      assert.equal(await weight.inputValue(), String(weightKnob.live));
      assert.equal(await page.getByLabel(`${other} floor`, { exact: true }).inputValue(),
        String(storeKnobs.knobs.find((knob) => knob.key === 'floor').live));
      await shot(page, 'desktop-16-knobs', { fromTop: false });

      // ---- Raise the other store's weight to 5: Apply sends only that, then reads the knobs again.
      await weight.fill('5');
      await page.locator('#knobs-dirty', { hasText: '1 unapplied change' }).waitFor();
      const sent = page.waitForRequest((request) => request.method() === 'POST' && new URL(request.url()).pathname === '/configure');
      const applied = waitForApi(page, 'POST', '/configure');
      const reread = waitForApi(page, 'GET', '/knobs', 200);
      await page.getByRole('button', { name: 'Apply' }).click();
      const request = await sent;
      assert.deepEqual(request.postDataJSON(), { stores: [{ name: other, weight: 5 }] });
      assert.match(request.headers()['content-type'], /^application\/json/);
      const response = await applied;
      assert.equal(response.status(), 200, await response.text());
      const result = await response.json();
      assert.equal(result.ok, true);
      await reread;
      const notice = page.locator('#knobs-result .notice.success');
      await notice.waitFor();
      assert.match(await notice.innerText(), /Applied/);
      // What changed: the weight, and not the floor the server's `changed` may repeat.
      await notice.locator(`li[data-changed="${other}.weight"]`, { hasText: '5' }).waitFor();
      assert.equal(await notice.locator(`li[data-changed="${other}.floor"]`).count(), 0, await notice.innerText());
      await page.locator(`#knobs-stores [data-store="${other}"] tr[data-knob="weight"] .tag.twiddled`).waitFor();
      assert.equal(await weight.inputValue(), '5');
      assert.equal(await page.locator(`#knobs-stores [data-store="${other}"] tr[data-knob="weight"] td`).nth(1).textContent(), yamlText(weightKnob.yaml));
      await page.locator('#knobs-dirty', { hasText: 'no changes' }).waitFor();
      await shot(page, 'desktop-17-knobs-applied', { fromTop: false });

      // The same search: the other store's hit leads now.
      const afterApply = await search(page, CUDA, 10);
      assert.equal(afterApply.hits[0].store, other, `top hit after weight 5: ${afterApply.hits.map((hit) => hit.store).join(', ')}`);
      assert.notEqual(afterApply.hits[0].store, before.hits[0].store);
      assert.equal(await page.locator('#hits li.hit').first().getAttribute('data-store'), other);

      // ---- A bad k (0): the server's 422 words, exactly, beside the form; the edit stays; nothing applied.
      // The tab reads the knobs again: edit once they are drawn, as a person would.
      const drawn = waitForApi(page, 'GET', '/knobs');
      await page.getByRole('tab', { name: 'Knobs' }).click();
      await drawn;
      await kInput.waitFor();
      await kInput.fill('0');
      page.expectHttpError(422, '/configure');
      let refused = waitForApi(page, 'POST', '/configure');
      await kInput.press('Enter'); // Enter in a field applies
      let answer = await refused;
      assert.equal(answer.status(), 422);
      let { detail } = await answer.json();
      assert.ok(typeof detail === 'string' && detail, 'a 422 says why');
      await page.locator('#knobs-error', { hasText: detail }).waitFor();
      assert.equal(await page.locator('#knobs-error').textContent(), detail);
      assert.equal(await kInput.inputValue(), '0', 'the refused edit stays, to be fixed');
      await page.locator('#knobs-dirty', { hasText: '1 unapplied change' }).waitFor();
      await shot(page, 'desktop-18-knobs-refused', { fromTop: false });

      // Reset puts the live value back; a weight of -1 is refused the same way.
      await page.getByRole('button', { name: 'Reset' }).click();
      assert.equal(await kInput.inputValue(), String(k.live));
      assert.equal(await page.locator('#knobs-error').textContent(), '');
      await weight.fill('-1');
      page.expectHttpError(422, '/configure');
      refused = waitForApi(page, 'POST', '/configure');
      await page.getByRole('button', { name: 'Apply' }).click();
      answer = await refused;
      assert.equal(answer.status(), 422);
      ({ detail } = await answer.json());
      assert.ok(typeof detail === 'string' && detail);
      await page.locator('#knobs-error', { hasText: detail }).waitFor();
      assert.equal(await page.locator('#knobs-error').textContent(), detail);
      await page.getByRole('button', { name: 'Reset' }).click();
      assert.equal(await weight.inputValue(), '5');

      // The server changed nothing: its knobs are as applied, and the next search is the same.
      const now = await getJson(demo.url, '/knobs');
      assert.equal(now.federation.find((knob) => knob.key === 'k').live, k.live);
      assert.equal(now.stores.find((s) => s.name === other).knobs.find((knob) => knob.key === 'weight').live, 5);
      const unchanged = await search(page, CUDA, 10);
      const order = (a) => a.hits.map((hit) => `${hit.store}:${hit.id}:${hit.score}`);
      assert.deepEqual(order(unchanged), order(afterApply));
      page.assertClean();
    } finally {
      await context.close();
    }
  });

  test('narrow screen (390 px): the six tabs and the health cards fit', { timeout: TEST_MS }, async () => {
    const { context, page } = await openPage({ width: 390, height: 844 });
    try {
      await page.goto(`${demo.url}/viewer`);
      await page.locator('#pill', { hasText: /fanning: \d\/3/ }).waitFor();
      for (const name of ['Search', 'Stores', 'Overview', 'Health', 'Knobs', 'Quality']) {
        const box = await page.getByRole('tab', { name }).boundingBox();
        assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `the ${name} tab is on screen: ${JSON.stringify(box)}`);
      }
      // After a search the pill says who answered, and fits.
      const answer = await search(page, CUDA, 10);
      await checkAnsweredPill(page, answer);
      const pillBox = await page.locator('#pill').boundingBox();
      assert.ok(pillBox.x >= 0 && pillBox.x + pillBox.width <= 390, `the pill is on screen: ${JSON.stringify(pillBox)}`);
      await noHorizontalScroll(page);
      await shot(page, 'narrow-8-search-pill');
      await page.getByRole('tab', { name: 'Health' }).click();
      await page.locator(`#health-list li[data-store="${DOWN}"]`).waitFor();
      await noHorizontalScroll(page);
      await shot(page, 'narrow-8-health');
      page.assertClean();
    } finally {
      await context.close();
    }
  });

  test('narrow screen (390 px): the knobs fit, as cards', { timeout: TEST_MS }, async () => {
    await getJson(demo.url, '/knobs'); // a callosum without GET /knobs fails here, plainly
    const { context, page } = await openPage({ width: 390, height: 844 });
    try {
      await page.goto(`${demo.url}/viewer`);
      await page.locator('#pill', { hasText: /fanning: \d\/3/ }).waitFor();
      await page.getByRole('tab', { name: 'Knobs' }).click();
      await page.locator('#knobs-form').waitFor();
      const weight = page.getByLabel('facts weight', { exact: true });
      await weight.waitFor({ state: 'visible' });
      assert.ok((await weight.boundingBox()).width >= 60, 'the weight field is wide enough to type in');
      // fusion_mode is a select, on screen.
      const fusion = page.getByRole('combobox', { name: 'fusion_mode', exact: true });
      const fusionBox = await fusion.boundingBox();
      assert.ok(fusionBox.width >= 60 && fusionBox.x >= 0 && fusionBox.x + fusionBox.width <= 390, JSON.stringify(fusionBox));
      await noHorizontalScroll(page);
      await shot(page, 'narrow-9-knobs', { fromTop: false });

      // Scrolled to the bottom, the last knob row is clear of the sticky Apply bar, also once a
      // refusal has made the bar taller; and a field's scroll margin is the bar's height.
      await lastKnobRowClearOfBar(page);
      await shot(page, 'narrow-9-knobs-bottom', { fromTop: false });
      const floor = page.getByLabel(`${DOWN} floor`, { exact: true });
      await floor.fill('7');
      page.expectHttpError(422, '/configure');
      const refused = waitForApi(page, 'POST', '/configure');
      await page.getByRole('button', { name: 'Apply' }).click();
      assert.equal((await refused).status(), 422);
      await page.locator('#knobs-error:not(:empty)').waitFor();
      const barHeight = (await page.locator('#knobs-form .apply-bar').boundingBox()).height;
      await page.waitForFunction((height) => getComputedStyle(document.querySelector('#knobs-form input')).scrollMarginBottom === `${Math.ceil(height) + 20}px`, barHeight);
      await lastKnobRowClearOfBar(page);
      await shot(page, 'narrow-9-knobs-bottom-refused', { fromTop: false });
      await page.getByRole('button', { name: 'Reset' }).click();
      page.assertClean();
    } finally {
      await context.close();
    }
  });
});

// ---- why: the store filter, each hit's explain, and the packet's order ------------------------------

// The packet's shaping on (a quota, an authority margin, satellite and topic edges), so the explain
// has steps to tell and a page of 3 leaves hits out.
const WHY_CONFIG = PACKET_CONFIG;
const WHY_N = 3;

/** A number as the why panel writes it: to six figures (1, 0.5, 60). */
function plainNumber(value) {
  return typeof value === 'number' && Number.isFinite(value) ? String(Number(value.toPrecision(6))) : '—';
}

/** The chips of the store filter, as [name, pressed] pairs. */
async function chipStates(page) {
  return page.locator('#chips .chip').evaluateAll((chips) => chips.map((chip) => [chip.dataset.store, chip.getAttribute('aria-pressed')]));
}

/** Submits the search form as it stands and resolves to the request's body and the answer. */
async function searchAsIs(page, query) {
  await page.getByLabel('Query', { exact: true }).fill(query);
  const sent = page.waitForRequest((request) => request.method() === 'POST' && new URL(request.url()).pathname === '/search');
  const answered = waitForApi(page, 'POST', '/search');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  const body = (await sent).postDataJSON();
  const response = await answered;
  assert.equal(response.status(), 200, `POST /search answered ${response.status()}: ${await response.text()}`);
  await page.locator('#search-status .fanned').waitFor();
  return { body, answer: await response.json() };
}

/**
 * Checks hit `index`'s why panel against its explain: the badge is a button that opens it (by
 * keyboard), store rank, weight, floor and k as sent, the contribution as weight / (k + rank), each
 * step's why, and the one-line why. Escape closes it and gives the focus back to the badge.
 */
async function checkWhyPanel(page, hit, index) {
  const x = hit.explain;
  assert.ok(x && typeof x === 'object', `hit ${index + 1} carries an explain: ${JSON.stringify(hit)}`);
  const card = page.locator('#hits li.hit').nth(index);
  const badge = card.getByRole('button', { name: new RegExp(`^${hit.store} — why`) });
  assert.equal(await badge.textContent(), hit.store);
  assert.equal(await badge.getAttribute('aria-expanded'), 'false');
  const panel = card.locator('.why-panel');
  assert.equal(await panel.isVisible(), false, 'closed until asked');
  await badge.focus();
  await page.keyboard.press('Enter');
  await panel.waitFor({ state: 'visible' });
  assert.equal(await badge.getAttribute('aria-expanded'), 'true');
  assert.equal(await badge.getAttribute('aria-controls'), await panel.getAttribute('id'));
  const cell = (key) => panel.locator(`dd[data-why="${key}"]`).textContent();
  assert.equal(await cell('store_rank'), typeof x.store_rank === 'number' ? `#${x.store_rank}` : '—');
  assert.equal(await cell('weight'), plainNumber(x.weight));
  assert.equal(await cell('floor'), plainNumber(x.floor));
  assert.equal(await cell('k'), plainNumber(x.k));
  const contribution = await cell('contribution');
  if (x.contribution === null) {
    assert.ok(isEdge(hit), `only an edge has no contribution: ${JSON.stringify(hit)}`);
    assert.match(contribution, /^none: an edge/);
  } else {
    const expected = x.weight / (x.k + x.store_rank);
    assert.ok(Math.abs(x.contribution - expected) < 1e-9, `contribution ${x.contribution} is weight/(k+rank) = ${expected}`);
    assert.equal(contribution, `${plainNumber(x.weight)} / (${plainNumber(x.k)} + ${plainNumber(x.store_rank)}) = ${Number(expected.toPrecision(4))}`);
    if (!isEdge(hit) && hit.score !== null) assert.ok(Math.abs(hit.score - x.contribution) < 1e-9 || (x.steps ?? []).length > 0,
      `a hit no step moved scores its contribution: ${JSON.stringify(hit)}`);
  }
  const text = await panel.innerText();
  if (x.why) assert.equal(await panel.locator('[data-testid="why-summary"]').textContent(), x.why);
  for (const step of x.steps ?? []) {
    const item = panel.locator(`li[data-step="${step.step}"]`);
    assert.ok(await item.count() >= 1, `the step ${step.step} is listed: ${text}`);
    if (step.why) assert.ok(text.includes(step.why), `the step's why is shown: ${step.why} in ${text}`);
  }
  assert.doesNotMatch(text, /undefined|NaN|\[object/);
  await page.keyboard.press('Escape');
  await panel.waitFor({ state: 'hidden' });
  assert.equal(await badge.getAttribute('aria-expanded'), 'false');
  assert.ok(await badge.evaluate((node) => node === document.activeElement), 'Escape gives the focus back to the badge');
}

/** Opens "Why this order" and checks it: the packet in order with each hit's why, then explain_dropped. */
async function checkWhyOrder(page, answer) {
  const toggle = page.getByRole('button', { name: 'Why this order' });
  await toggle.waitFor();
  if (await toggle.getAttribute('aria-expanded') !== 'true') await toggle.click();
  assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
  const box = page.locator('#why-order');
  await box.waitFor({ state: 'visible' });
  assert.equal(await page.getByRole('region', { name: 'Why this order' }).count(), 1, 'a region named Why this order');
  const items = box.locator('[data-testid="why-order-hits"] > li');
  assert.equal(await items.count(), answer.hits.length);
  for (const [index, hit] of answer.hits.entries()) {
    const item = items.nth(index);
    assert.equal(await item.getAttribute('data-store'), hit.store);
    const said = await item.innerText();
    assert.ok(said.includes(String(hit.id)), `${said} names ${hit.id}`);
    assert.ok(hit.explain?.why && said.includes(hit.explain.why), `${said} says why: ${hit.explain?.why}`);
  }
  assert.ok(Array.isArray(answer.explain_dropped), `the answer lists what it left out: ${Object.keys(answer)}`);
  assert.ok(answer.explain_dropped.length > 0, `a page of ${WHY_N} leaves hits out`);
  const dropped = box.locator('[data-testid="why-dropped"] > li');
  assert.equal(await dropped.count(), answer.explain_dropped.length);
  for (const [index, item] of answer.explain_dropped.entries()) {
    const said = await dropped.nth(index).innerText();
    assert.equal(await dropped.nth(index).getAttribute('data-store'), item.store);
    for (const part of [String(item.id), `#${item.store_rank}`, item.why]) assert.ok(said.includes(part), `${said} has ${part}`);
  }
  assert.doesNotMatch(await box.innerText(), /undefined|NaN|\[object|not explained/);
  return box;
}

/** No two of `selector`'s boxes overlap (each a visible element). */
async function noOverlaps(page, selector) {
  const boxes = await page.locator(selector).evaluateAll((nodes) => nodes.filter((n) => n.offsetParent !== null).map((n) => {
    const r = n.getBoundingClientRect();
    return { name: n.dataset.store || n.id || n.className, x: r.x, y: r.y, w: r.width, h: r.height };
  }));
  for (let i = 0; i < boxes.length; i += 1) {
    for (let j = i + 1; j < boxes.length; j += 1) {
      const a = boxes[i];
      const b = boxes[j];
      const apart = a.x + a.w <= b.x + 0.5 || b.x + b.w <= a.x + 0.5 || a.y + a.h <= b.y + 0.5 || b.y + b.h <= a.y + 0.5;
      assert.ok(apart, `${selector}: ${JSON.stringify(a)} overlaps ${JSON.stringify(b)}`);
    }
  }
}

describe('The Bridge says why: the store filter, each hit\u2019s explain, the packet\u2019s order', () => {
  let demo;
  let dir;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'scc-e2e-why-'));
    const config = path.join(dir, 'why.yaml');
    writeFileSync(config, WHY_CONFIG);
    demo = await startDemo({}, ['-c', config]);
  });
  after(async () => {
    if (demo) await demo.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const [label, viewport, tag] of [['desktop (1280 px)', { width: 1280, height: 800 }, 'desktop'], ['phone (390 px)', { width: 390, height: 844 }, 'narrow']]) {
    test(`${label}: chips restrict the search to the stores chosen; with none chosen, Search is off and says why`, { timeout: TEST_MS }, async () => {
      const roster = await getJson(demo.url, '/stores');
      const active = roster.stores.filter((store) => store.status === 'active');
      assert.deepEqual(active.map((store) => store.name), ['episodic', 'facts']);
      const { context, page } = await openPage(viewport);
      try {
        await page.goto(`${demo.url}/viewer`);
        await page.locator('#pill', { hasText: 'fanning: 2/2' }).waitFor();
        // One chip per active store, all pressed, each titled with its store's description.
        const group = page.getByRole('group', { name: 'Stores' });
        await group.waitFor();
        assert.deepEqual(await chipStates(page), [['episodic', 'true'], ['facts', 'true']]);
        for (const store of active) {
          const chip = group.getByRole('button', { name: store.name, exact: true });
          if (store.description) assert.equal(await chip.getAttribute('title'), store.description);
          else assert.ok((await chip.getAttribute('title')).includes(store.name));
        }
        assert.ok(await page.getByRole('button', { name: 'all', exact: true }).isDisabled(), '"all" is off while all are chosen');
        await noHorizontalScroll(page);
        await shot(page, `${tag}-19-chips`);

        // facts off, by keyboard: only episodic is searched, and every hit is episodic's.
        await group.getByRole('button', { name: 'facts', exact: true }).focus();
        await page.keyboard.press('Space');
        assert.deepEqual(await chipStates(page), [['episodic', 'true'], ['facts', 'false']]);
        await page.locator('#filter-note', { hasText: 'Searching 1 of 2: episodic.' }).waitFor();
        let { body, answer } = await searchAsIs(page, CUDA);
        assert.deepEqual(body.stores, ['episodic']);
        assert.equal(body.explain, true);
        assert.equal('exclude_stores' in body, false);
        assert.deepEqual(answer.stores_searched, ['episodic']);
        assert.ok(answer.hits.length > 0);
        for (const hit of answer.hits) assert.equal(hit.store, 'episodic', JSON.stringify(hit));
        assert.equal(await page.locator('#hits li.hit').count(), answer.hits.length);
        assert.equal(await page.locator('#hits li.hit:not([data-store="episodic"])').count(), 0);
        await checkAnsweredPill(page, answer);
        assert.ok((await page.locator('#pill').getAttribute('title')).includes('left out by the store filter: facts'));
        await noHorizontalScroll(page);
        await shot(page, `${tag}-20-chips-episodic`);

        // The other way round, by mouse: facts alone.
        await group.getByRole('button', { name: 'facts', exact: true }).click();
        await group.getByRole('button', { name: 'episodic', exact: true }).click();
        ({ body, answer } = await searchAsIs(page, CUDA));
        assert.deepEqual(body.stores, ['facts']);
        for (const hit of answer.hits) assert.equal(hit.store, 'facts', JSON.stringify(hit));
        assert.equal(await page.locator('#hits li.hit:not([data-store="facts"])').count(), 0);

        // None: Search is off, the page says why, and nothing is sent (not even by Enter).
        await group.getByRole('button', { name: 'facts', exact: true }).click();
        assert.deepEqual(await chipStates(page), [['episodic', 'false'], ['facts', 'false']]);
        const searchButton = page.getByRole('button', { name: 'Search', exact: true });
        assert.ok(await searchButton.isDisabled(), 'Search is off with no store chosen');
        await page.locator('#filter-note', { hasText: 'No store is chosen' }).waitFor();
        assert.equal(await searchButton.getAttribute('title'), 'Pick at least one store to search');
        let sent = 0;
        const count = (request) => { if (new URL(request.url()).pathname === '/search') sent += 1; };
        page.on('request', count);
        await page.getByLabel('Query', { exact: true }).press('Enter');
        await noHorizontalScroll(page);
        await shot(page, `${tag}-21-chips-none`);

        // "all" chooses every store again: no filter is sent.
        await page.getByRole('button', { name: 'all', exact: true }).click();
        assert.deepEqual(await chipStates(page), [['episodic', 'true'], ['facts', 'true']]);
        assert.equal(await searchButton.isDisabled(), false);
        assert.equal(await page.locator('#filter-note').textContent(), '');
        ({ body, answer } = await searchAsIs(page, CUDA));
        page.off('request', count);
        assert.equal(sent, 1, 'nothing was sent with no store chosen');
        assert.equal('stores' in body, false, 'no `stores` when every store is chosen');
        assert.deepEqual([...answer.stores_searched].sort(), ['episodic', 'facts']);
        page.assertClean();
      } finally {
        await context.close();
      }
    });

    test(`${label}: each hit's badge opens its why (contribution = weight / (k + rank)); "Why this order" lists the packet and what was left out`, { timeout: TEST_MS }, async () => {
      const { context, page } = await openPage(viewport);
      try {
        await page.goto(`${demo.url}/viewer`);
        await page.locator('#pill', { hasText: 'fanning: 2/2' }).waitFor();
        await page.locator('#chips .chip').first().waitFor();
        const answer = await search(page, CUDA, WHY_N);
        assert.ok(answer.hits.length >= WHY_N, `a packet of ${WHY_N} ranked hits (and its edges): ${answer.hits.length}`);
        assert.ok(answer.hits.every((hit) => hit.explain && typeof hit.explain === 'object'),
          `explain: true gives every hit an explain (a callosum that predates explain gives none): ${JSON.stringify(answer.hits[0])}`);
        for (const [index, hit] of answer.hits.entries()) await checkWhyPanel(page, hit, index);

        // The first one open, for the picture; then by mouse, a second click closes it.
        const badge = page.locator('#hits li.hit').first().locator('button.badge');
        await badge.click();
        await page.locator('#hits li.hit').first().locator('.why-panel').waitFor({ state: 'visible' });
        await noHorizontalScroll(page);
        await noOverlaps(page, '#hits li.hit:first-child .hit-head > *');
        await noOverlaps(page, '#hits li.hit:first-child .why-panel dl > *');
        await shot(page, `${tag}-22-why`);
        await badge.click();
        await page.locator('#hits li.hit').first().locator('.why-panel').waitFor({ state: 'hidden' });

        // "Why this order": closed until asked; then the packet with each why, and what was left out.
        assert.equal(await page.locator('#why-order').isVisible(), false);
        const box = await checkWhyOrder(page, answer);
        await noHorizontalScroll(page);
        await noOverlaps(page, '#why-order [data-testid="why-order-hits"] > li');
        await noOverlaps(page, '#why-order [data-testid="why-dropped"] > li');
        await box.scrollIntoViewIfNeeded();
        await shot(page, `${tag}-23-why-order`);
        // It stays open for the next search, and tells that one's order.
        const again = await search(page, 'jetpack backup', WHY_N);
        assert.ok(await page.locator('#why-order').isVisible(), '"Why this order" stays open');
        await checkWhyOrder(page, again);

        // A store weighted 5 crowds the other out of a page of 3: the quota's seat keeps one of the
        // other's hits, and that hit's why says so (a `seat` step); the weight is in the arithmetic.
        const configure = (weight) => fetch(`${demo.url}/configure`, {
          method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ stores: [{ name: 'episodic', weight }] }),
        });
        const weighted = await configure(5);
        assert.equal(weighted.status, 200, await weighted.text());
        try {
          const seated = await search(page, CUDA, WHY_N);
          const kept = seated.hits.findIndex((hit) => (hit.explain?.steps ?? []).some((step) => step.step === 'seat'));
          assert.ok(kept >= 0, `a hit kept by a seat: ${JSON.stringify(seated.hits.map((hit) => hit.explain))}`);
          assert.equal(seated.hits[kept].store, 'facts');
          await checkWhyPanel(page, seated.hits[kept], kept);
          const top = seated.hits.findIndex((hit) => hit.store === 'episodic' && !isEdge(hit));
          assert.equal(seated.hits[top].explain.weight, 5);
          await checkWhyPanel(page, seated.hits[top], top);
          await checkWhyOrder(page, seated);
          const keptCard = page.locator('#hits li.hit').nth(kept);
          await keptCard.locator('button.badge').click();
          await keptCard.locator('.why-panel li[data-step="seat"]').waitFor();
          await noHorizontalScroll(page);
          await shot(page, `${tag}-24-why-seat`);
        } finally {
          const back = await configure(1);
          assert.equal(back.status, 200, await back.text());
        }

        // Server text stays text.
        assert.equal(await page.locator('#panel-search img, #why-order b, .why-panel b').count(), 0);
        page.assertClean();
      } finally {
        await context.close();
      }
    });
  }

  test('a filtered store that has gone: the server\u2019s 400 words, and the chips are read again', { timeout: TEST_MS }, async () => {
    const added = await fetch(`${demo.url}/stores`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'gone-soon', type: 'seren_loci', url: `http://127.0.0.1:${await closedPort()}`, description: 'a store about to be removed' }),
    });
    assert.equal(added.status, 200, await added.text());
    const { context, page } = await openPage();
    try {
      await page.goto(`${demo.url}/viewer`);
      const group = page.getByRole('group', { name: 'Stores' });
      await group.getByRole('button', { name: 'gone-soon', exact: true }).waitFor();
      assert.equal(await group.getByRole('button', { name: 'gone-soon', exact: true }).getAttribute('title'), 'a store about to be removed');
      await group.getByRole('button', { name: 'episodic', exact: true }).click();
      await group.getByRole('button', { name: 'facts', exact: true }).click();
      const removed = await fetch(`${demo.url}/stores/gone-soon`, { method: 'DELETE' });
      assert.equal(removed.status, 200, await removed.text());
      page.expectHttpError(400, '/search');
      await page.getByLabel('Query', { exact: true }).fill(CUDA);
      const refused = waitForApi(page, 'POST', '/search');
      const reread = waitForApi(page, 'GET', '/stores', 200);
      await page.getByRole('button', { name: 'Search', exact: true }).click();
      const response = await refused;
      assert.equal(response.status(), 400);
      const { detail } = await response.json();
      assert.ok(detail.includes('gone-soon'), detail);
      await page.locator('#search-notices .notice.error', { hasText: detail }).waitFor();
      await reread;
      await group.getByRole('button', { name: 'gone-soon', exact: true }).waitFor({ state: 'detached' });
      assert.deepEqual(await chipStates(page), [['episodic', 'false'], ['facts', 'false']]);
      assert.ok(await page.getByRole('button', { name: 'Search', exact: true }).isDisabled());
      page.assertClean();
    } finally {
      await context.close();
    }
  });
});

// ---- the config file edited under a running `serve`: the Health tab says what became of it -------

// `serve` watches its config file (the demo does not) and reads it again within about half a second.
// The Health tab reads GET /stores after each GET /health/stores (every 5 s), so a banner follows a
// change within one refresh: allow two, plus the reload.
const CONFIG_BANNER_MS = 2 * 5_000 + 3_000;

/** A config with one store (never called here), `port`, and more `federation` lines. */
function serveConfig(port, federation = '') {
  return `server: {port: ${port}}
federation:
${federation}  stores:
    - {name: ${DOWN}, type: seren_loci, url: "http://127.0.0.1:9"}
`;
}

describe('The Bridge tells of the config file (serve, reloading it)', () => {
  let serve;
  let dir;
  let config;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'scc-e2e-reload-'));
    config = path.join(dir, 'seren-corpus-callosum.yaml');
    writeFileSync(config, serveConfig(0));
    serve = await startBinary(['serve', '--config', config]);
  });
  after(async () => {
    if (serve) await serve.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('health: a config edit that cannot be loaded, then one that waits for a restart, each shown as a banner above the cards; fits at 390 px', { timeout: TEST_MS }, async () => {
    const { context, page } = await openPage();
    try {
      const first = await getJson(serve.url, '/stores');
      assert.equal(first.config_error, undefined, JSON.stringify(first));
      assert.equal(first.restart_needed, undefined, JSON.stringify(first));
      assert.equal(first.overlay_error, undefined, JSON.stringify(first));
      const nResults = first.n_results;
      assert.notEqual(nResults, 3, 'the default n_results is not the one the edit sets');

      assert.equal((await page.goto(`${serve.url}/viewer`)).status(), 200);
      await page.locator('#pill', { hasText: 'fanning: 1/1' }).waitFor();
      const healthRead = waitForApi(page, 'GET', '/health/stores', 200);
      const storesRead = waitForApi(page, 'GET', '/stores', 200);
      await page.getByRole('tab', { name: 'Health' }).click();
      await healthRead;
      await storesRead;
      await page.locator(`#health-list li[data-store="${DOWN}"]`).waitFor();
      assert.equal(await page.locator('#health-config').textContent(), '', 'no banner while the file is fine');
      assert.equal(await page.locator('#health-config .notice').count(), 0);

      // From here on, the refreshes' two reads never overlap.
      const inFlight = new Set();
      const overlaps = [];
      const watched = (request) => ['/health/stores', '/stores'].includes(new URL(request.url()).pathname);
      page.on('request', (request) => {
        if (!watched(request)) return;
        if (inFlight.size) overlaps.push(`${request.url()} while ${[...inFlight].map((r) => r.url()).join(', ')}`);
        inFlight.add(request);
      });
      const done = (request) => inFlight.delete(request);
      page.on('requestfinished', done);
      page.on('requestfailed', done);

      // A file that cannot be loaded: the next refresh shows why, naming the file.
      writeFileSync(config, 'federation: [\n');
      const broken = page.locator('#health-config [data-kind="config-error"]');
      await broken.waitFor({ timeout: CONFIG_BANNER_MS });
      const error = (await getJson(serve.url, '/stores')).config_error;
      assert.ok(typeof error === 'string' && error.includes(config), `config_error names the file: ${error}`);
      const said = await broken.textContent();
      assert.ok(said.startsWith('The config file was changed but not loaded: '), said);
      assert.ok(said.includes(error), `the banner carries the server's words: ${said}`);
      assert.ok(said.endsWith('The service runs on the config it last loaded.'), said);
      assert.equal(await broken.getAttribute('role'), 'alert');
      assert.equal(await page.locator('#health-config [data-kind="restart-needed"]').count(), 0);
      // Above the cards; the store still fans on the config last loaded.
      const bannerBox = await broken.boundingBox();
      const listBox = await page.locator('#health-list').boundingBox();
      assert.ok(bannerBox.y + bannerBox.height <= listBox.y, `the banner is above the cards: ${JSON.stringify({ bannerBox, listBox })}`);
      await page.locator(`#health-list li[data-store="${DOWN}"]`).waitFor();
      await shot(page, 'desktop-16-health-config-error');

      // 390 px: the banner (a long path in it) wraps, nothing scrolls sideways.
      await page.setViewportSize({ width: 390, height: 844 });
      await noHorizontalScroll(page);
      const narrowBox = await broken.boundingBox();
      assert.ok(narrowBox.x >= 0 && narrowBox.x + narrowBox.width <= 390, `the banner fits: ${JSON.stringify(narrowBox)}`);
      assert.ok(await broken.evaluate((node) => node.scrollWidth <= node.clientWidth), 'the banner does not overflow');
      await shot(page, 'narrow-10-health-config-error');

      // A valid file that moves the port (only at a restart) and sets n_results (live at once).
      writeFileSync(config, serveConfig(54321, '  n_results: 3\n'));
      const restart = page.locator('#health-config [data-kind="restart-needed"]');
      await restart.waitFor({ timeout: CONFIG_BANNER_MS });
      await broken.waitFor({ state: 'detached', timeout: CONFIG_BANNER_MS });
      const now = await getJson(serve.url, '/stores');
      assert.equal(now.config_error, undefined, JSON.stringify(now));
      assert.deepEqual(now.restart_needed, ['server.port']);
      assert.equal(now.n_results, 3, 'the reload applied n_results');
      assert.equal(await restart.textContent(), 'Changed in the config file, applied at the next restart: server.port');
      assert.equal(await restart.locator('code').textContent(), 'server.port');
      assert.equal(await page.locator('#health-config .notice').count(), 1);
      await noHorizontalScroll(page);
      const restartBox = await restart.boundingBox();
      assert.ok(restartBox.x >= 0 && restartBox.x + restartBox.width <= 390, `the banner fits: ${JSON.stringify(restartBox)}`);
      assert.ok(await restart.evaluate((node) => node.scrollWidth <= node.clientWidth), 'the banner does not overflow');
      await shot(page, 'narrow-11-health-restart-needed');
      await page.setViewportSize({ width: 1280, height: 900 });
      await shot(page, 'desktop-17-health-restart-needed');

      assert.deepEqual(overlaps, [], 'GET /health/stores and GET /stores never overlap');
      assert.doesNotMatch(await page.locator('#panel-health').innerText(), /null|undefined|NaN|\[object/);
      page.assertClean();
    } finally {
      await context.close();
    }
  });
});

// ---- quality: judged queries scored (POST /eval), and a tuned setting applied ----------------------

/** docs/evaluation.md's example judgments (its block marked `<!-- example: eval-judgments -->`). */
function exampleJudgments() {
  const doc = path.join(ROOT, 'docs', 'evaluation.md');
  const match = /<!-- example: eval-judgments -->\s*```jsonl\n([\s\S]*?)```/.exec(readFileSync(doc, 'utf8'));
  assert.ok(match, `${doc} has the example judgments`);
  return match[1];
}

// Judged queries over the demo's stores where only facts' documents are relevant (each query's
// first two facts), none of episodic's. The fusion puts episodic's first hit first (a tie at rank 1
// goes to the store listed first), so weighing episodic down wins, on the half tuned on and on the
// half held out: over the demo's stores, `eval --tune --json --k 5` tunes k 60 → 10, episodic
// 1 → 0.25, facts 1 → 0.5.
const FACTS_ONLY = [
  ['nas', 'nas model', 'fact-009', 'fact-007'],
  ['storage', 'xavier storage', 'fact-007', 'fact-002'],
  ['db', 'wren database', 'fact-021', 'fact-036'],
  ['cuda', 'which CUDA version does the Xavier need', 'fact-004', 'fact-001'],
  ['backup', 'where do the backups go', 'fact-008', 'fact-012'],
  ['release', 'wren release', 'fact-024', 'fact-018'],
].map(([qid, query, first, second]) => JSON.stringify({
  qid, query, relevant: [{ store: 'facts', id: first, grade: 2 }, { store: 'facts', id: second }],
})).join('\n') + '\n';

const QUALITY_MEASURES = ['ndcg', 'recall', 'mrr', 'precision'];
const FUSED_RUN = '(fused)';
const SLOW = 'slow-e2e';

/** A measure as the Quality tab writes it (and the eval command): three decimals; a delta signed. */
function f3(value) { return value.toFixed(3); }
function signed3(value) { return (value < 0 ? '-' : '+') + Math.abs(value).toFixed(3); }

/** POST `apiPath` from Node with the token: the status and the answer. */
async function postWithToken(base, apiPath, body) {
  const response = await fetch(`${base}${apiPath}`, {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` }, body: JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, answer: text ? JSON.parse(text) : null };
}

/** The Quality tab's panel (its labels are its own: the Knobs tab has a `k` and an `identity` too). */
function qualityPanel(page) { return page.locator('#panel-quality'); }

/** `promise`, or a failure naming `what` after `ms`. */
function within(promise, ms, what) {
  let timer;
  const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms); });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** Sets the Quality form (the tab open): judgments, k and tune. */
async function fillQuality(page, { judgments, k, tune }) {
  const panel = qualityPanel(page);
  if (judgments !== undefined) await panel.getByLabel('Judgments').fill(judgments);
  await panel.getByLabel('k (cutoff)', { exact: true }).fill(String(k));
  await panel.getByRole('checkbox', { name: /^Tune/ }).setChecked(tune);
}

/** Presses Run: the request's body and the answer, once the page has drawn it (status 200) or refused it. */
async function runQuality(page, status = 200) {
  const sent = page.waitForRequest((request) => request.method() === 'POST' && new URL(request.url()).pathname === '/eval');
  const answered = waitForApi(page, 'POST', '/eval');
  await page.getByRole('button', { name: 'Run', exact: true }).click();
  const request = await sent;
  const response = await answered;
  assert.equal(response.status(), status, `POST /eval answered ${response.status()}: ${await response.text()}`);
  assert.equal(request.headers().authorization, `Bearer ${TOKEN}`);
  if (status === 200) await page.locator('#eval-result:not([hidden]) #q-charts').waitFor();
  else await page.locator('#eval-notices .notice.error').waitFor();
  return { body: request.postDataJSON(), answer: await response.json() };
}

/**
 * The bar chart and its table say what `report` says: per measure, one bar per run, the fusion
 * first (highlighted) and then each store in the report's order; each mean and its interval in
 * numbers, the bar as long as the mean and the whisker spanning the interval (on a 0..100 scale).
 */
async function checkQualityChart(page, report) {
  const runs = [[FUSED_RUN, report.fused], ...report.stores.map((store) => [store.store, store])];
  for (const key of QUALITY_MEASURES) {
    const chart = page.locator(`#q-charts figure[data-measure="${key}"]`);
    assert.match(await chart.locator('figcaption strong').textContent(), new RegExp(`@${report.k}$`));
    const rows = chart.locator('li.q-bar');
    assert.deepEqual(await rows.evaluateAll((nodes) => nodes.map((node) => node.dataset.run)), runs.map(([run]) => run));
    assert.ok(await rows.first().evaluate((node) => node.classList.contains('fused')), 'the fusion is highlighted');
    for (const [index, [run, measures]] of runs.entries()) {
      const { mean, low, high } = measures[key];
      const row = rows.nth(index);
      assert.equal(await row.locator('.mean').textContent(), f3(mean), `${run} ${key}`);
      assert.equal(await row.locator('.ci').textContent(), `[${f3(low)}, ${f3(high)}]`, `${run} ${key}`);
      const drawn = await row.locator('svg').evaluate((node) => ({
        bar: Number(node.querySelector('.q-fill').getAttribute('width')),
        whisker: [...node.querySelectorAll('.q-ci')].map((line) => [Number(line.getAttribute('x1')), Number(line.getAttribute('x2'))]),
      }));
      assert.ok(Math.abs(drawn.bar - mean * 100) < 1e-9, `${run} ${key}: the bar is ${drawn.bar}, the mean ${mean}`);
      assert.ok(Math.abs(drawn.whisker[0][0] - low * 100) < 1e-9 && Math.abs(drawn.whisker[0][1] - high * 100) < 1e-9,
        `${run} ${key}: the whisker ${JSON.stringify(drawn.whisker[0])} spans [${low}, ${high}]`);
      const cell = page.locator(`[data-testid="eval-numbers"] tr[data-run="${run}"] td[data-measure="${key}"]`);
      assert.equal(await cell.textContent(), `${f3(mean)} [${f3(low)}, ${f3(high)}]`);
    }
  }
}

/** The queries where fusing lost most: worst first, at most twenty, each delta signed. */
async function checkWorstQueries(page, report) {
  const worst = report.per_query.filter((q) => q.delta_ndcg !== null).sort((a, b) => a.delta_ndcg - b.delta_ndcg).slice(0, 20);
  const rows = page.locator('[data-testid="eval-worst"] tbody tr');
  assert.deepEqual(await rows.evaluateAll((nodes) => nodes.map((node) => node.dataset.qid)), worst.map((q) => String(q.qid)));
  for (const [index, q] of worst.entries()) {
    const row = rows.nth(index);
    assert.equal(await row.locator('[data-testid="delta"]').textContent(), signed3(q.delta_ndcg));
    const said = await row.innerText();
    assert.ok(said.includes(q.query) && said.includes(q.best_store), `${said} names the query and ${q.best_store}`);
  }
}

/** The tune panel: current beside tuned, the held-out check, and the YAML and Apply only when changed. */
async function checkTunePanel(page, tune) {
  const panel = page.locator('#q-tune');
  await panel.waitFor();
  const cell = (row, setting) => row.locator(`td[data-setting="${setting}"]`).textContent();
  const kRow = panel.locator('tr[data-row="k"]');
  assert.equal(await cell(kRow, 'current'), String(tune.current.k));
  assert.equal(await cell(kRow, 'tuned'), String(tune.tuned.k));
  for (const [setting, { weights }] of [['current', tune.current], ['tuned', tune.tuned]]) {
    for (const { store, weight } of weights) {
      assert.equal(await cell(panel.locator(`tr[data-row="weight"][data-store="${store}"]`), setting), plainNumber(weight), `${setting} ${store}`);
    }
    const { mean, low, high } = tune[setting].held_out.ndcg;
    assert.equal(await cell(panel.locator('tr[data-row="held_out_ndcg"]'), setting), `${f3(mean)} [${f3(low)}, ${f3(high)}]`);
  }
  const delta = tune.delta_ndcg;
  assert.ok((await panel.locator('[data-testid="tune-delta"]').textContent())
    .includes(`${signed3(delta.mean)} [${signed3(delta.low)}, ${signed3(delta.high)}]`));
  assert.ok((await panel.locator('[data-testid="tune-tried"]').textContent()).includes(`${tune.tried} settings tried`));
  assert.deepEqual(await panel.locator('[data-testid="tune-held-out"] code').allTextContents(), tune.held_out.map(String));
  assert.equal(await panel.getAttribute('data-changed'), String(tune.changed));
  const apply = page.getByRole('button', { name: 'Apply the tuned setting' });
  if (tune.changed) {
    assert.equal(await panel.locator('[data-testid="tune-yaml"]').textContent(), tune.yaml);
    assert.ok(await apply.isEnabled());
    assert.equal(await panel.locator('[data-testid="tune-stands"]').count(), 0);
  } else {
    await panel.locator('[data-testid="tune-stands"]', { hasText: 'The current setting stands.' }).waitFor();
    assert.equal(await apply.count(), 0, 'nothing to apply');
    assert.equal(await panel.locator('[data-testid="tune-yaml"]').count(), 0);
  }
  assert.doesNotMatch(await panel.innerText(), /undefined|NaN|null|\[object/);
  return page.locator('#q-apply'); // by id: once applied, its name is "Applied"
}

/** Clicks Apply: the POST /configure it sends (the tuned body, with the token), then the Knobs data read again. */
async function applyTuned(page, apply, tune) {
  const sent = page.waitForRequest((request) => request.method() === 'POST' && new URL(request.url()).pathname === '/configure');
  const applied = waitForApi(page, 'POST', '/configure');
  const reread = waitForApi(page, 'GET', '/knobs', 200);
  await apply.click();
  const request = await sent;
  assert.deepEqual(request.postDataJSON(), tune.configure);
  assert.equal(request.headers().authorization, `Bearer ${TOKEN}`);
  const response = await applied;
  assert.equal(response.status(), 200, await response.text());
  await reread;
  const notice = page.locator('#q-apply-result .notice.success');
  await notice.waitFor();
  if (tune.current.k !== tune.tuned.k) {
    assert.equal(await notice.locator('li[data-changed="k"]').textContent(), `k ${tune.current.k} → ${tune.tuned.k}`);
  }
  for (const { store, weight } of tune.tuned.weights) {
    const before = tune.current.weights.find((w) => w.store === store).weight;
    if (before !== weight) {
      assert.equal(await notice.locator(`li[data-changed="${store} weight"]`).textContent(),
        `${store} weight ${plainNumber(before)} → ${plainNumber(weight)}`);
    }
  }
  assert.ok(await apply.isDisabled(), 'applied once');
  assert.equal(await apply.textContent(), 'Applied');
  return response.json();
}

describe('The Bridge measures quality (POST /eval, a demo that requires a bearer token)', () => {
  let demo;
  before(async () => { demo = await startDemo({ SEREN_SCC_BEARER_TOKEN: TOKEN }); });
  after(async () => { if (demo) await demo.stop(); });

  /** A page with the token in this browser already (as the token prompt leaves it). */
  async function openWithToken(viewport) {
    const opened = await openPage(viewport);
    await opened.context.addInitScript((token) => localStorage.setItem('seren_token', token), TOKEN);
    assert.equal((await opened.page.goto(`${demo.url}/viewer`)).status(), 200);
    await opened.page.locator('#pill', { hasText: 'fanning: 2/2' }).waitFor();
    return opened;
  }

  test('the example judgments scored as POST /eval answers them; tuned, the current setting stands or is applied; a facts-only set tunes and applies; a bad line shows the 422', { timeout: TEST_MS }, async () => {
    const before = await getJson(demo.url, '/knobs', TOKEN);
    const liveK = before.federation.find((knob) => knob.key === 'k').live;
    const liveWeights = before.stores.map((store) => ({ name: store.name, weight: store.knobs.find((knob) => knob.key === 'weight').live }));
    const { context, page } = await openWithToken();
    try {
      // By keyboard: from Knobs, ArrowRight is Quality; from Quality, it wraps to Search.
      await page.getByRole('tab', { name: 'Knobs' }).click();
      await page.getByRole('tab', { name: 'Knobs' }).focus();
      await page.keyboard.press('ArrowRight');
      const tab = page.getByRole('tab', { name: 'Quality' });
      assert.equal(await tab.getAttribute('aria-selected'), 'true');
      assert.ok(await tab.evaluate((node) => node === document.activeElement), 'the Quality tab has focus');
      assert.ok(await page.getByRole('tabpanel', { name: 'Quality' }).isVisible());
      assert.equal(new URL(page.url()).hash, '#quality');
      await page.keyboard.press('ArrowRight');
      assert.equal(await page.getByRole('tab', { name: 'Search' }).getAttribute('aria-selected'), 'true');
      await page.keyboard.press('End');
      assert.equal(await tab.getAttribute('aria-selected'), 'true');

      // Empty, prefilled with nothing: Run says what is missing and sends nothing.
      await page.locator('#eval-empty').waitFor();
      const panel = qualityPanel(page);
      assert.equal(await panel.getByLabel('Judgments').inputValue(), '');
      assert.equal(await panel.getByLabel('k (cutoff)', { exact: true }).inputValue(), '10');
      assert.equal(await panel.getByLabel('Identity').inputValue(), '');
      assert.equal(await panel.getByLabel('Identity').locator('option').first().textContent(), 'the server’s (none)');
      let sent = 0;
      const count = (request) => { if (new URL(request.url()).pathname === '/eval') sent += 1; };
      page.on('request', count);
      await page.getByRole('button', { name: 'Run', exact: true }).click();
      await page.locator('#eval-error', { hasText: 'Paste judged queries' }).waitFor();
      await shot(page, 'desktop-25-quality-empty');

      // ---- The docs' example judgments, k 10. While the request is held, the page says it runs.
      const judgments = exampleJudgments();
      const lines = judgments.trim().split('\n').length;
      await fillQuality(page, { judgments, k: 10, tune: false });
      let release;
      const held = new Promise((resolve) => { release = resolve; });
      const isEval = (url) => url.pathname === '/eval';
      await page.route(isEval, async (route) => { await held; await route.continue(); });
      const answered = waitForApi(page, 'POST', '/eval');
      await page.getByRole('button', { name: 'Run', exact: true }).click();
      await page.locator('#eval-status', { hasText: `Running… ${lines} judged queries` }).waitFor();
      assert.ok(await page.getByRole('button', { name: 'Run', exact: true }).isDisabled(), 'Run is off while it runs');
      assert.equal(await page.locator('#panel-quality').getAttribute('aria-busy'), 'true');
      release();
      const response = await answered;
      await page.unroute(isEval);
      assert.equal(response.status(), 200, await response.text());
      const body = response.request().postDataJSON();
      assert.deepEqual(body, { judgments, k: 10 }, 'the text as typed, k; no tune, no identity');
      const report = await response.json();
      await page.locator('#eval-result:not([hidden]) #q-charts').waitFor();
      page.off('request', count);
      assert.equal(sent, 1, 'nothing was sent without judgments');
      assert.ok(await page.getByRole('button', { name: 'Run', exact: true }).isEnabled());
      // The same body from Node answers the same document, and the chart shows its numbers.
      const direct = await postWithToken(demo.url, '/eval', body);
      assert.equal(direct.status, 200, JSON.stringify(direct.answer));
      assert.deepEqual(report, direct.answer);
      assert.equal(report.queries, lines);
      assert.deepEqual(report.stores.map((store) => store.store), ['episodic', 'facts']);
      await checkQualityChart(page, report);
      await checkWorstQueries(page, report);
      const status = await page.locator('#eval-status').innerText();
      assert.ok(status.includes(`${lines} judged queries · k = 10 · identity ${report.identity}`), status);
      assert.equal(await page.locator('#eval-result .notice.failed, #eval-result .notice.skipped').count(), 0, 'every store answered');
      assert.equal(await page.locator('#q-tune').count(), 0, 'no tune panel without tune');
      await page.locator('.q-numbers summary').click();
      await noHorizontalScroll(page);
      await shot(page, 'desktop-26-quality');

      // ---- Tuned: current beside tuned; the demo's judgments may leave the setting as it is.
      await fillQuality(page, { k: 5, tune: true });
      let run = await runQuality(page);
      assert.deepEqual(run.body, { judgments, k: 5, tune: true });
      let direct2 = await postWithToken(demo.url, '/eval', run.body);
      assert.deepEqual(run.answer, direct2.answer);
      await checkQualityChart(page, run.answer);
      let apply = await checkTunePanel(page, run.answer.tune);
      if (run.answer.tune.changed) {
        await applyTuned(page, apply, run.answer.tune);
        const knobs = await getJson(demo.url, '/knobs', TOKEN);
        assert.equal(knobs.federation.find((knob) => knob.key === 'k').live, run.answer.tune.tuned.k);
        await postWithToken(demo.url, '/configure', { k: liveK, stores: liveWeights });
      }
      await shot(page, 'desktop-27-quality-tune');

      // ---- Judgments where only facts' documents are relevant: weighing episodic down wins, Apply.
      await fillQuality(page, { judgments: FACTS_ONLY, k: 5, tune: true });
      run = await runQuality(page);
      direct2 = await postWithToken(demo.url, '/eval', run.body);
      assert.deepEqual(run.answer, direct2.answer);
      const factsOnly = run.answer;
      const { tune } = run.answer;
      assert.equal(tune.changed, true, `the facts-only judgments move the setting: ${JSON.stringify(tune)}`);
      const tunedWeight = (store) => tune.tuned.weights.find((w) => w.store === store).weight;
      assert.ok(tunedWeight('episodic') < tunedWeight('facts'), `episodic weighed down: ${JSON.stringify(tune.tuned.weights)}`);
      assert.ok(tune.delta_ndcg.mean > 0, `the held-out queries gain: ${JSON.stringify(tune.delta_ndcg)}`);
      await checkQualityChart(page, run.answer);
      await checkWorstQueries(page, run.answer);
      apply = await checkTunePanel(page, tune);
      await page.locator('#q-tune').scrollIntoViewIfNeeded();
      await shot(page, 'desktop-28-quality-tuned');
      const answer = await applyTuned(page, apply, tune);
      assert.equal(answer.ok, true);
      // GET /knobs now has the tuned k and weights, and so has the Knobs tab.
      const knobs = await getJson(demo.url, '/knobs', TOKEN);
      assert.equal(knobs.federation.find((knob) => knob.key === 'k').live, tune.tuned.k);
      for (const { store, weight } of tune.tuned.weights) {
        assert.equal(knobs.stores.find((s) => s.name === store).knobs.find((knob) => knob.key === 'weight').live, weight, store);
      }
      await shot(page, 'desktop-29-quality-applied');
      await page.getByRole('tab', { name: 'Knobs' }).click();
      for (const { store, weight } of tune.tuned.weights) {
        assert.equal(await page.getByLabel(`${store} weight`, { exact: true }).inputValue(), String(weight));
      }
      assert.equal(await page.locator('#knobs-federation tr[data-knob="k"] input').inputValue(), String(tune.tuned.k));

      // Run again: the tuned setting is the current one now, so it stands, and nothing is offered.
      await page.getByRole('tab', { name: 'Quality' }).click();
      run = await runQuality(page);
      assert.equal(run.answer.tune.changed, false, JSON.stringify(run.answer.tune));
      assert.equal(run.answer.tune.current.k, tune.tuned.k);
      assert.ok(run.answer.fused.ndcg.mean > factsOnly.fused.ndcg.mean, `the fusion under the tuned setting does better: ${run.answer.fused.ndcg.mean}`);
      await checkQualityChart(page, run.answer);
      await checkTunePanel(page, run.answer.tune);

      // ---- A bad line: the server's 422 words, as they are; nothing else drawn.
      const bad = `${judgments.trim()}\n{"query": "jetpack", "relevant": [{"store": "nope", "id": "x"}]}\n`;
      await fillQuality(page, { judgments: bad, k: 10, tune: false });
      page.expectHttpError(422, '/eval');
      const refused = await runQuality(page, 422);
      const { detail } = refused.answer;
      assert.ok(detail.includes(`line ${lines + 1}`) && detail.includes('nope'), detail);
      const directBad = await postWithToken(demo.url, '/eval', refused.body);
      assert.equal(directBad.status, 422);
      assert.equal(directBad.answer.detail, detail);
      const notice = page.locator('#eval-notices .notice.error');
      assert.equal(await notice.getAttribute('role'), 'alert');
      assert.equal(await notice.locator('[data-testid="eval-detail"]').textContent(), detail);
      assert.ok(await page.locator('#eval-result').isHidden(), 'no result under a refusal');
      await noHorizontalScroll(page);
      await shot(page, 'desktop-30-quality-refused');
      page.assertClean();
    } finally {
      await context.close();
      const back = await postWithToken(demo.url, '/configure', { k: liveK, stores: liveWeights });
      assert.equal(back.status, 200, JSON.stringify(back.answer));
    }
  });

  test('a second evaluation while one runs is a 503, said plainly; a store that hangs is listed as failed, with its queries', { timeout: TEST_MS }, async () => {
    // A store that takes the connection and never answers: an evaluation waits on it for the
    // per-store timeout, two seconds here, so a second evaluation meanwhile finds the first running.
    const sockets = new Set();
    let connected = null;
    const hang = net.createServer((socket) => { sockets.add(socket); if (connected) connected(); });
    await new Promise((resolve, reject) => { hang.once('error', reject); hang.listen(0, '127.0.0.1', resolve); });
    const knobs = await getJson(demo.url, '/knobs', TOKEN);
    const timeout = knobs.federation.find((knob) => knob.key === 'per_store_timeout_s').live;
    const { context, page } = await openWithToken();
    try {
      let done = await postWithToken(demo.url, '/stores', { name: SLOW, type: 'seren_loci', url: `http://127.0.0.1:${hang.address().port}` });
      assert.equal(done.status, 200, JSON.stringify(done.answer));
      done = await postWithToken(demo.url, '/configure', { per_store_timeout_s: 2 });
      assert.equal(done.status, 200, JSON.stringify(done.answer));
      await page.getByRole('tab', { name: 'Quality' }).click();
      const judgments = exampleJudgments();
      await fillQuality(page, { judgments, k: 10, tune: false });

      const first = new Promise((resolve) => { connected = resolve; });
      const running = postWithToken(demo.url, '/eval', { judgments: [{ qid: 'jp', query: 'jetpack', relevant: [{ store: 'facts', id: 'fact-002' }] }] });
      await within(first, UI_MS, `${SLOW} was not called`); // the evaluation from Node holds the one there is
      page.expectHttpError(503, '/eval');
      const busy = await runQuality(page, 503);
      const notice = page.locator('#eval-notices .notice.error');
      assert.ok((await notice.textContent()).includes('Another evaluation is running'), await notice.textContent());
      assert.equal(await notice.locator('[data-testid="eval-detail"]').textContent(), busy.answer.detail);
      await shot(page, 'desktop-31-quality-busy');
      const ran = await running;
      assert.equal(ran.status, 200, JSON.stringify(ran.answer));
      assert.ok(ran.answer.per_query[0].failed.some((f) => f.name === SLOW), JSON.stringify(ran.answer.per_query[0]));

      // Now it runs; the hanging store counts as an empty ranking and is named with its queries.
      const { answer } = await runQuality(page);
      await checkQualityChart(page, answer);
      const failed = page.locator('#eval-result .notice.failed li[data-store="slow-e2e"]');
      await failed.waitFor();
      const said = await failed.textContent();
      const reasons = new Set(answer.per_query.flatMap((q) => q.failed.filter((f) => f.name === SLOW).map((f) => f.reason)));
      assert.ok(reasons.size > 0, JSON.stringify(answer.per_query));
      assert.ok([...reasons].slice(0, 3).every((reason) => said.includes(reason)), `${said} gives the reasons ${[...reasons]}`);
      const qids = answer.per_query.filter((q) => q.failed.some((f) => f.name === SLOW)).map((q) => String(q.qid));
      assert.ok(said.includes(`${qids.length} ${qids.length === 1 ? 'query' : 'queries'}: ${qids.join(', ')}`), said);
      await noHorizontalScroll(page);
      await shot(page, 'desktop-32-quality-failed');
      page.assertClean();
    } finally {
      await context.close();
      await fetch(`${demo.url}/stores/${SLOW}`, { method: 'DELETE', headers: { authorization: `Bearer ${TOKEN}` } });
      await postWithToken(demo.url, '/configure', { per_store_timeout_s: timeout });
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => hang.close(resolve));
    }
  });

  test('narrow screen (390 px): a judgments file loaded, the chart, the worst queries and the tuned setting fit', { timeout: TEST_MS }, async () => {
    const { context, page } = await openWithToken({ width: 390, height: 844 });
    try {
      const tab = page.getByRole('tab', { name: 'Quality' });
      const box = await tab.boundingBox();
      assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `the Quality tab is on screen: ${JSON.stringify(box)}`);
      await tab.click();
      // Load file: read in the browser into the box, as it is.
      await qualityPanel(page).getByLabel('Load file').setInputFiles({ name: 'facts-only.jsonl', mimeType: 'application/x-ndjson', buffer: Buffer.from(FACTS_ONLY) });
      await page.locator('#eval-status', { hasText: 'Loaded facts-only.jsonl: 6 judged queries.' }).waitFor();
      assert.equal(await qualityPanel(page).getByLabel('Judgments').inputValue(), FACTS_ONLY);
      await noHorizontalScroll(page);
      await shot(page, 'narrow-12-quality-form');
      await fillQuality(page, { k: 5, tune: true });
      const { body, answer } = await runQuality(page);
      assert.deepEqual(body, { judgments: FACTS_ONLY, k: 5, tune: true });
      const direct = await postWithToken(demo.url, '/eval', body);
      assert.deepEqual(answer, direct.answer);
      await checkQualityChart(page, answer);
      await checkWorstQueries(page, answer);
      const apply = await checkTunePanel(page, answer.tune);
      // Every bar has room; nothing scrolls sideways; Apply is on screen.
      for (const bar of await page.locator('#q-charts li.q-bar svg').all()) {
        const { width, x } = await bar.boundingBox();
        assert.ok(width >= 48 && x >= 0 && x + width <= 390, `a bar of ${width}px at ${x}`);
      }
      await noHorizontalScroll(page);
      if (answer.tune.changed) {
        await apply.scrollIntoViewIfNeeded();
        const applyBox = await apply.boundingBox();
        assert.ok(applyBox.x >= 0 && applyBox.x + applyBox.width <= 390, JSON.stringify(applyBox));
      }
      await shot(page, 'narrow-13-quality');
      page.assertClean();
    } finally {
      await context.close();
    }
  });
});

// ---- views: the part of the roster a view's token sees (contract §6c) -------------------------

// The demo replaces `stores` with its two sample stores (episodic, facts); `server` stays the
// file's. research sees facts* and may change nothing; editors sees episodic and ed-* and may write.
const VIEWS_SERVER_TOKEN = 'e2e-views-server-token-5c1d';
const RESEARCH_TOKEN = 'e2e-view-research-token-8a2e';
const EDITOR_TOKEN = 'e2e-view-editors-token-41f9';
const VIEWS_CONFIG = `server:
  bearer_token: ${VIEWS_SERVER_TOKEN}
  views:
    - name: research
      token: ${RESEARCH_TOKEN}
      stores: ["facts*"]
      write: false
    - name: editors
      token: ${EDITOR_TOKEN}
      stores: ["episodic", "ed-*"]
      write: true
`;
const HIDDEN_FROM_RESEARCH = 'episodic';

/** `method` `apiPath` from Node with `token` as the bearer: the status and the answer. */
async function callAs(base, method, apiPath, token, body) {
  const headers = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(`${base}${apiPath}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await response.text();
  return { status: response.status, answer: text ? JSON.parse(text) : null };
}

describe('The Bridge shows the caller\u2019s view (server.views: a read-only view, a write view, the server token)', () => {
  let demo;
  let dir;
  let factsUrl;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'scc-e2e-views-'));
    const config = path.join(dir, 'views.yaml');
    writeFileSync(config, VIEWS_CONFIG);
    demo = await startDemo({}, ['-c', config]);
    const all = await getJson(demo.url, '/stores', VIEWS_SERVER_TOKEN);
    assert.equal(all.view, undefined, 'the server token has no view');
    factsUrl = all.stores.find((store) => store.name === 'facts').url;
  });
  after(async () => {
    if (demo) await demo.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** A page with `token` in this browser already (as the token prompt leaves it). */
  async function openAs(token, viewport) {
    const opened = await openPage(viewport);
    await opened.context.addInitScript((value) => localStorage.setItem('seren_token', value), token);
    assert.equal((await opened.page.goto(`${demo.url}/viewer`)).status(), 200);
    return opened;
  }

  test('a read-only view: its name in the header, only its stores, the hidden store never named, no add, remove, configure or run', { timeout: TEST_MS }, async () => {
    // A managed store the view sees, so that a ✕ would have something to remove.
    const mirror = await callAs(demo.url, 'POST', '/stores', VIEWS_SERVER_TOKEN, { name: 'facts-mirror', type: 'seren_loci', url: factsUrl });
    assert.equal(mirror.status, 200, JSON.stringify(mirror.answer));
    const { context, page } = await openAs(RESEARCH_TOKEN);
    try {
      // The header names the view beside the token button, read-only, its patterns in the title.
      const badge = page.locator('header .actions #view-badge');
      await badge.waitFor({ state: 'visible' });
      assert.equal(await badge.textContent(), 'view: research \u00b7 read-only (its stores: facts*)');
      const title = await badge.getAttribute('title');
      assert.ok(title.includes('facts*') && title.includes('not change them'), title);
      await page.locator('#pill', { hasText: 'fanning: 2/2' }).waitFor();
      assert.deepEqual((await page.locator('#chips .chip').allTextContents()).sort(), ['facts', 'facts-mirror']);

      // A search fans its stores only.
      const answer = await search(page, 'jetpack');
      assert.deepEqual([...answer.stores_searched].sort(), ['facts', 'facts-mirror']);
      await page.locator('#hits li.hit').first().waitFor();
      for (const store of await page.locator('#hits li.hit').evaluateAll((cards) => cards.map((card) => card.dataset.store))) {
        assert.ok(store.startsWith('facts'), `a hit of ${store}`);
      }
      await shot(page, 'desktop-views-1-read-only-search');

      // Stores: its two, a note saying what the view may do, and no add or remove.
      await page.getByRole('tab', { name: 'Stores' }).click();
      await page.locator('#roster li.store[data-store="facts-mirror"]').waitFor();
      assert.deepEqual((await page.locator('#roster li.store').evaluateAll((cards) => cards.map((card) => card.dataset.store))).sort(), ['facts', 'facts-mirror']);
      const note = page.locator('#stores-view');
      assert.ok(await note.isVisible());
      assert.match(await note.innerText(), /View research:.*facts\*.*not change them/s);
      assert.equal(await page.getByRole('button', { name: /Add store/ }).count(), 0, 'no + Add store');
      assert.equal(await page.locator('#add-form').isVisible(), false);
      assert.equal(await page.getByRole('button', { name: /^Remove store/ }).count(), 0, 'no \u2715');
      assert.match(await page.locator('#roster li.store[data-store="facts-mirror"] .store-note').textContent(), /^Managed: added at run time/);
      await shot(page, 'desktop-views-2-read-only-stores');

      // Health: its stores' cards (GET /health/stores with the view's token).
      const healthRead = waitForApi(page, 'GET', '/health/stores', 200);
      await page.getByRole('tab', { name: 'Health' }).click();
      await healthRead;
      await page.locator('#health-list li.hcard[data-store="facts-mirror"]').waitFor();
      assert.equal(await page.locator('#health-list li.hcard').count(), 2);

      // Knobs: shown, with no field and no Apply.
      await page.getByRole('tab', { name: 'Knobs' }).click();
      await page.locator('#knobs-form').waitFor({ state: 'visible' });
      await page.locator('#knobs-stores .knob-store[data-store="facts-mirror"]').waitFor();
      assert.ok(await page.locator('#knobs-view').isVisible());
      assert.match(await page.locator('#knobs-view').innerText(), /not changed/);
      assert.equal(await page.locator('#knobs-form input, #knobs-form select').count(), 0, 'no knob field');
      assert.equal(await page.getByRole('button', { name: 'Apply' }).count(), 0, 'no Apply');
      assert.equal(await page.locator('#knobs-form .tag.fixed').count(), 0, 'a knob the view may not set is not one that waits for a restart');
      await shot(page, 'desktop-views-3-read-only-knobs');

      // Quality: a note instead of the form; no Run.
      await page.getByRole('tab', { name: 'Quality' }).click();
      await page.locator('#eval-view').waitFor({ state: 'visible' });
      assert.match(await page.locator('#eval-view').innerText(), /View research:.*write/s);
      assert.equal(await page.getByRole('button', { name: 'Run' }).count(), 0, 'no Run');
      assert.equal(await page.locator('#eval-form').isVisible(), false);
      assert.equal(await page.locator('#eval-empty').isVisible(), false);

      // The hidden store is named nowhere: not in the text, not in the markup.
      assert.ok(!(await page.content()).includes(HIDDEN_FROM_RESEARCH), `the page names ${HIDDEN_FROM_RESEARCH}`);
      assert.ok(!(await page.evaluate(() => document.body.innerText)).includes(HIDDEN_FROM_RESEARCH));

      // At 390 px the badge fits in the header.
      await page.setViewportSize({ width: 390, height: 844 });
      await page.getByRole('tab', { name: 'Stores' }).click();
      assert.ok(await badge.isVisible());
      await noHorizontalScroll(page);
      await shot(page, 'narrow-views-read-only-stores');
      page.assertClean();
    } finally {
      await context.close();
      const gone = await callAs(demo.url, 'DELETE', '/stores/facts-mirror', VIEWS_SERVER_TOKEN);
      assert.equal(gone.status, 200, JSON.stringify(gone.answer));
    }
  });

  test('a write view keeps its write controls: adds a store within its patterns (not outside), weights and removes it; forgotten, then the server token: every store, no view', { timeout: TEST_MS }, async () => {
    const { context, page } = await openAs(EDITOR_TOKEN);
    try {
      const badge = page.locator('#view-badge');
      await badge.waitFor({ state: 'visible' });
      assert.equal(await badge.textContent(), 'view: editors \u00b7 can change its stores (its stores: episodic, ed-*)');
      await page.locator('#pill', { hasText: 'fanning: 1/1' }).waitFor();

      // Stores: the add form is there, its hint naming the patterns.
      await page.getByRole('tab', { name: 'Stores' }).click();
      await page.locator('#roster li.store[data-store="episodic"]').waitFor();
      assert.equal(await page.locator('#roster li.store').count(), 1);
      assert.match(await page.locator('#stores-view').innerText(), /View editors:.*episodic, ed-\*.*may add/s);
      await page.getByRole('button', { name: '+ Add store' }).click();
      const form = page.locator('#add-form');
      await form.getByLabel('Name').waitFor({ state: 'visible' });
      assert.match(await page.locator('#f-name-hint').textContent(), /this view adds names matching episodic, ed-\*$/);

      // A name outside its patterns: the server's 403, beside the form.
      page.expectHttpError(403, '/stores');
      await form.getByLabel('Name').fill('zz-outside');
      await form.getByLabel('Type').selectOption('seren_loci');
      await form.getByLabel('URL').fill(factsUrl);
      const refused = waitForApi(page, 'POST', '/stores');
      await page.getByRole('button', { name: 'Add store', exact: true }).click();
      assert.equal((await refused).status(), 403);
      await page.locator('#add-error', { hasText: 'may add only stores whose names match its patterns (episodic, ed-*)' }).waitFor();

      // One within them: added, fanned, removable.
      await form.getByLabel('Name').fill('ed-notes');
      const added = waitForApi(page, 'POST', '/stores');
      await page.getByRole('button', { name: 'Add store', exact: true }).click();
      assert.equal((await added).status(), 200);
      const card = page.locator('#roster li.store[data-store="ed-notes"]');
      await card.waitFor();
      await page.locator('#pill', { hasText: 'fanning: 2/2' }).waitFor();
      assert.ok(await card.getByRole('button', { name: 'Remove store ed-notes' }).isVisible());
      await shot(page, 'desktop-views-4-write-stores');

      // Knobs: its stores' weight and floor are fields, the service's knobs are not; Apply re-weights.
      await page.getByRole('tab', { name: 'Knobs' }).click();
      const weight = page.getByLabel('ed-notes weight', { exact: true });
      await weight.waitFor();
      assert.equal(await page.locator('#knobs-federation input, #knobs-federation select').count(), 0, 'no field for the service\u2019s knobs');
      assert.match(await page.locator('#knobs-view').innerText(), /weight and floor of its own stores/);
      await weight.fill('2');
      const configured = waitForApi(page, 'POST', '/configure');
      await page.getByRole('button', { name: 'Apply' }).click();
      const configure = await configured;
      assert.equal(configure.status(), 200);
      assert.deepEqual(Object.keys(configure.request().postDataJSON()), ['stores']);
      await page.locator('#knobs-result li[data-changed="ed-notes.weight"]').waitFor();

      // Quality: it may run an evaluation.
      await page.getByRole('tab', { name: 'Quality' }).click();
      assert.ok(await page.getByRole('button', { name: 'Run' }).isVisible());
      assert.equal(await page.locator('#eval-view').isVisible(), false);

      // Remove what it added.
      await page.getByRole('tab', { name: 'Stores' }).click();
      page.once('dialog', (dialog) => dialog.accept());
      const removed = waitForApi(page, 'DELETE', '/stores/ed-notes');
      await card.getByRole('button', { name: 'Remove store ed-notes' }).click();
      assert.equal((await removed).status(), 200);
      await card.waitFor({ state: 'detached' });
      await page.locator('#pill', { hasText: 'fanning: 1/1' }).waitFor();

      // Forgotten: the view and what it was shown go, and the roster says it needs a token.
      const tokenDialog = page.getByRole('dialog', { name: 'Bearer token' });
      await page.locator('#token-btn').click();
      await tokenDialog.waitFor({ state: 'visible' });
      await tokenDialog.getByRole('button', { name: 'Forget' }).click();
      await tokenDialog.waitFor({ state: 'hidden' });
      await badge.waitFor({ state: 'hidden' });
      assert.equal(await page.locator('#roster li.store').count(), 0);
      assert.equal(await page.locator('#stores-view').isVisible(), false);
      const ask = page.locator('#stores-notices .notice', { hasText: 'bearer token' });
      await ask.waitFor();

      // The server's own token: every store, no view badge, every write control, the service's knobs.
      await ask.getByRole('button', { name: /Enter token/ }).click();
      await tokenDialog.waitFor({ state: 'visible' });
      const read = waitForApi(page, 'GET', '/stores', 200);
      await tokenDialog.getByLabel('Token').fill(VIEWS_SERVER_TOKEN);
      await tokenDialog.getByRole('button', { name: 'Save' }).click();
      const roster = await (await read).json();
      assert.equal(roster.view, undefined);
      await page.locator('#roster li.store[data-store="facts"]').waitFor();
      assert.deepEqual((await page.locator('#roster li.store').evaluateAll((cards) => cards.map((c) => c.dataset.store))).sort(), ['episodic', 'facts']);
      await page.locator('#pill', { hasText: 'fanning: 2/2' }).waitFor();
      assert.equal(await badge.isVisible(), false);
      assert.equal(await page.locator('#stores-view').isVisible(), false);
      assert.ok(await page.getByRole('button', { name: '+ Add store' }).isVisible());
      await page.getByRole('tab', { name: 'Knobs' }).click();
      await page.locator('#knobs-federation').getByLabel('k', { exact: true }).waitFor();
      assert.equal(await page.locator('#knobs-view').isVisible(), false);
      await page.getByRole('tab', { name: 'Quality' }).click();
      assert.ok(await page.getByRole('button', { name: 'Run' }).isVisible());
      page.assertClean();
    } finally {
      await context.close();
    }
  });
});
