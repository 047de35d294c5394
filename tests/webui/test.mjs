// The web UI in a real browser: Debian's Chromium, headless, driven by puppeteer-core.
// Starts a cluster of three engine-workers on loopback that --join an engine-coordinator with
// `nodes: auto` and an API key, then:
//   chat: the page asks for the key once; a reply streams in token by token (the workers delay
//         each frame a little, a slow link, so tokens arrive apart); Stop ends a reply early;
//         after a reload the conversation is still there (localStorage);
//   dashboard: the chain shows the three workers; after kill -9 of one, its status turns
//         offline and the chain is re-planned over the other two; when it comes back, it is
//         planned again.
// Screenshots (1280x800) of both views go to the directory given as the 3rd argument.
// Usage: node test.mjs BIN_DIR MODEL SCREENSHOT_DIR
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

const [bin, model, shotDir] = process.argv.slice(2);
if (!bin || !model || !shotDir) {
  console.error('usage: node test.mjs BIN_DIR MODEL SCREENSHOT_DIR');
  process.exit(2);
}
const KEY = 'webui-test-key';
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'baton-webui-'));
const children = new Set();
let browser = null;
let failures = 0;

function check(ok, what) {
  console.log(`${ok ? 'ok' : 'FAILED'}: ${what}`);
  if (!ok) failures++;
}

async function cleanup() {
  if (browser) await browser.close().catch(() => {});
  for (const c of children) c.kill('SIGKILL');
  try {
    fs.rmSync(work, { recursive: true, force: true, maxRetries: 5 });
  } catch (e) {
    console.error(`cannot remove ${work}: ${e.message}`);
  }
}
// The whole test is bounded: past this it fails and everything it started is killed.
const deadline = setTimeout(async () => {
  console.error('FAILED: the test did not finish within 270 s');
  await cleanup();
  process.exit(1);
}, 270_000);

function start(name, args) {
  const log = fs.openSync(path.join(work, name + '.log'), 'w');
  const child = spawn(args[0], args.slice(1), { stdio: ['ignore', log, log] });
  children.add(child);
  child.on('exit', () => children.delete(child));
  child.logFile = path.join(work, name + '.log');
  return child;
}
const logOf = (child) => fs.readFileSync(child.logFile, 'utf8');

async function waitFor(what, predicate, ms = 20_000) {
  const until = Date.now() + ms;
  for (;;) {
    const value = await predicate();
    if (value) return value;
    if (Date.now() > until) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Two consecutive free loopback ports: HTTP, and the control port the workers join (HTTP + 1).
async function freePortPair() {
  const bindable = (port) => new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
  for (let i = 0; i < 50; i++) {
    const port = 20000 + Math.floor(Math.random() * 30000);
    if (await bindable(port) && await bindable(port + 1)) return port;
  }
  throw new Error('no free port pair');
}

function startWorker(id, control) {
  return start(id, [path.join(bin, 'engine-worker'), '--host', '127.0.0.1', '--port', '0', '--node-id', id,
    '--model', model, '--threads', '1', '--insecure', '--join', `127.0.0.1:${control}`, '--heartbeat-ms', '200',
    '--speed', '10', '--test-write-delay-ms', '8']);
}

async function main() {
  const port = await freePortPair();
  const base = `http://127.0.0.1:${port}`;
  fs.writeFileSync(path.join(work, 'cluster.yaml'), [
    `model: ${model}`, 'cluster:', `  master: { host: 127.0.0.1, port: ${port} }`, '  insecure: true',
    '  nodes: auto', '  min_nodes: 3', '  join_timeout: 30', '  heartbeat_timeout: 1', ''].join('\n'));
  const workers = {};
  for (const id of ['w1', 'w2', 'w3']) workers[id] = startWorker(id, port + 1);
  const coordinator = start('coordinator', [path.join(bin, 'engine-coordinator'), '--config',
    path.join(work, 'cluster.yaml'), '-t', '1', '--slots', '2', '--ctx', '256', '--api-key', KEY]);
  try {
    await waitFor('the coordinator to listen', () => logOf(coordinator).includes('listening on http://'), 40_000);
  } catch (e) {
    console.error(logOf(coordinator));
    throw e;
  }

  browser = await puppeteer.launch({
    executablePath: process.env.BATON_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    // Root in a container, no GPU, a closed network: without these Chromium hangs or exits.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage', `--user-data-dir=${path.join(work, 'profile')}`],
    defaultViewport: { width: 1280, height: 800 },
    timeout: 120_000,  // a loaded machine starts Chromium slowly
  });
  const page = await browser.newPage();
  page.setDefaultTimeout(20_000);
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(e.message));

  // --- Chat ---------------------------------------------------------------------------------
  const page_res = await page.goto(base + '/', { waitUntil: 'load' });
  check(page_res.status() === 200, 'GET / loads');
  // The first API call meets 401: the page asks for the key once.
  await page.waitForSelector('#key-dialog[open]');
  await page.type('#key-input', KEY);
  await page.click('#key-form button');
  await page.waitForFunction(() => document.getElementById('model-name').textContent === 'stories260K');
  check(true, 'the page asked for the API key and then showed the model name');

  // Record every length the reply's text takes while it streams.
  await page.evaluate(() => {
    window.replyLengths = [];
    new MutationObserver(() => {
      const replies = document.querySelectorAll('#messages .msg.assistant .content');
      if (replies.length) window.replyLengths.push(replies[replies.length - 1].textContent.length);
    }).observe(document.getElementById('messages'), { childList: true, subtree: true, characterData: true });
  });
  await page.$eval('#temperature', (e) => { e.value = '0'; e.dispatchEvent(new Event('change')); });
  await page.$eval('#max-tokens', (e) => { e.value = '40'; e.dispatchEvent(new Event('change')); });
  await page.click('#input');
  await page.keyboard.type('Tell me a story about a cat.');
  await page.keyboard.down('Shift');
  await page.keyboard.press('Enter');
  await page.keyboard.up('Shift');
  const typed = await page.$eval('#input', (e) => e.value);
  check(typed.includes('\n'), `Shift+Enter inserts a new line (${JSON.stringify(typed)})`);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#messages .msg.assistant[data-state="done"]', { timeout: 30_000 });
  const lengths = await page.evaluate(() => window.replyLengths);
  const growing = [...new Set(lengths)].filter((n) => n > 0);
  check(growing.length >= 5 && growing.every((n, i) => i === 0 || n > growing[i - 1]),
    `the reply grew token by token (${growing.length} steps: ${growing.slice(0, 8).join(',')}...)`);
  const firstReply = await page.$eval('#messages .msg.assistant .content', (e) => e.textContent);
  const stats = await page.$eval('#messages .msg.assistant .stats', (e) => e.textContent);
  check(/TTFT \d+ ms/.test(stats) && /tokens\/s/.test(stats), `the reply shows TTFT and tokens/s (${stats})`);
  check(firstReply.trim().length > 0, 'the reply has text');

  // A long reply, stopped as soon as it starts.
  await page.$eval('#max-tokens', (e) => { e.value = '200'; e.dispatchEvent(new Event('change')); });
  await page.click('#input');
  await page.keyboard.type('And then?');
  await page.keyboard.press('Enter');
  await page.waitForFunction(() => {
    const r = document.querySelectorAll('#messages .msg.assistant');
    return r.length === 2 && r[1].querySelector('.content').textContent.length > 0;
  });
  await page.click('#stop');
  await page.waitForSelector('#messages .msg.assistant[data-state="stopped"]');
  const stopped = await page.$$eval('#messages .msg.assistant .stats', (es) => es[1].textContent);
  const stoppedTokens = Number((stopped.match(/(\d+) tokens(?!\/)/) || [])[1]);
  check(/stopped/.test(stopped) && stoppedTokens < 200, `Stop ended the reply early (${stopped})`);
  await page.screenshot({ path: path.join(shotDir, 'webui-chat.png') });

  // The conversation survives a reload (and the key is not asked again).
  const title = await page.$eval('#conversations li.active .title', (e) => e.textContent);
  await page.reload({ waitUntil: 'load' });
  await page.waitForFunction(() => document.getElementById('model-name').textContent === 'stories260K');
  check(!(await page.$('#key-dialog[open]')), 'the key is not asked for again after a reload');
  const after = await page.evaluate(() => ({
    title: document.querySelector('#conversations li.active .title').textContent,
    user: document.querySelector('#messages .msg.user .content').textContent,
    reply: document.querySelector('#messages .msg.assistant .content').textContent,
  }));
  check(after.title === title && after.user.startsWith('Tell me a story') && after.reply === firstReply,
    'after a reload the conversation is there');

  // --- Dashboard ------------------------------------------------------------------------------
  await page.click('#tab-dashboard');
  check(await page.evaluate(() => location.pathname) === '/dashboard', 'the Dashboard tab is at /dashboard');
  const chainIs = (ids) => page.waitForFunction((want) => document.getElementById('chain').dataset.stages === want,
    { timeout: 20_000 }, ids);
  await page.waitForFunction(() => (document.getElementById('chain').dataset.stages || '').split(',').length === 3);
  const planned = await page.$eval('#chain', (e) => e.dataset.stages);
  check(planned.split(',').sort().join(',') === 'w1,w2,w3', `the chain has the three workers (${planned})`);
  const online = await page.$$eval('#chain .node[data-status="online"]', (es) => es.length);
  check(online === 4, `coordinator and three workers online (${online})`);
  // Some traffic for the plot and the per-stage figures.
  for (let i = 0; i < 3; i++) {
    const res = await fetch(base + '/v1/completions', {
      method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + KEY },
      body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 24, temperature: 0 }),
    });
    check(res.ok, `a completion while the dashboard is open (${res.status})`);
    await new Promise((r) => setTimeout(r, 600));
  }
  await page.waitForFunction(() => /ms \/ token/.test(document.querySelector('#chain .node[data-node="w1"] .kv[data-key="compute"] .v')?.textContent));
  check(true, 'the dashboard shows per-stage compute time');

  // kill -9 the middle stage: it turns offline, and the chain is re-planned without it.
  const victim = planned.split(',')[1];
  const survivors = planned.split(',').filter((id) => id !== victim).join(',');
  workers[victim].kill('SIGKILL');
  const killedAt = Date.now();
  await page.waitForSelector(`.node[data-node="${victim}"][data-status="offline"]`);
  check(true, `${victim} shows offline ${((Date.now() - killedAt) / 1000).toFixed(1)} s after kill -9`);
  await chainIs(survivors);
  check(true, `the chain is re-planned over ${survivors} ${((Date.now() - killedAt) / 1000).toFixed(1)} s after kill -9`);
  const reason = await page.$eval(`.node[data-node="${victim}"]`, (e) => e.textContent);
  check(/heartbeat|missed|offline|lost|closed/i.test(reason), `the offline node says why (${reason.slice(0, 120)})`);

  // It comes back: planned again.
  workers[victim] = startWorker(victim, port + 1);
  await page.waitForFunction((id) => {
    const ids = (document.getElementById('chain').dataset.stages || '').split(',');
    return ids.length === 3 && ids.includes(id) &&
      document.querySelector(`#chain .node[data-node="${id}"]`)?.dataset.status === 'online';
  }, { timeout: 30_000 }, victim);
  check(true, `${victim} is back in the chain`);
  const res = await fetch(base + '/v1/completions', {
    method: 'POST', headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + KEY },
    body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 24, temperature: 0 }),
  });
  check(res.ok, 'the re-planned cluster serves');
  await new Promise((r) => setTimeout(r, 1500));  // one more sample in the plot
  await page.screenshot({ path: path.join(shotDir, 'webui-dashboard.png') });

  // Without the key the API refuses, while the page itself is public.
  check((await fetch(base + '/v1/dashboard')).status === 401, '/v1/dashboard needs the key');
  check((await fetch(base + '/')).status === 200, 'GET / needs no key');
  check(pageErrors.length === 0, `no script errors in the page (${pageErrors.join('; ')})`);

  coordinator.kill('SIGTERM');
  const code = await new Promise((r) => coordinator.on('exit', (c) => r(c)));
  check(code === 0, `engine-coordinator exits 0 on SIGTERM (${code})`);
}

try {
  await main();
} catch (e) {
  console.error('FAILED:', e.message);
  const pages = browser ? await browser.pages().catch(() => []) : [];
  if (pages.length) await pages[pages.length - 1].screenshot({ path: path.join(shotDir, 'webui-failure.png') }).catch(() => {});
  for (const f of fs.existsSync(work) ? fs.readdirSync(work) : [])
    if (f.endsWith('.log')) console.error(`--- ${f}\n${fs.readFileSync(path.join(work, f), 'utf8').slice(-3000)}`);
  failures++;
}
clearTimeout(deadline);
await cleanup();
console.log(failures ? `${failures} check(s) failed` : 'all checks passed');
process.exit(failures ? 1 : 0);
