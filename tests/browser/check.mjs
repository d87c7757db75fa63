// Browser checks of `hone report` and `hone serve`, in Debian's chromium driven by Playwright.
//   node check.mjs report HONE DB REPORT.html ARTIFACTS
//   node check.mjs dashboard HONE DB URL ARTIFACTS
// Each compares what the page draws with what the store holds (`hone show RUN --json`), checks
// that hostile text from the store stays text, and leaves a screenshot in ARTIFACTS.
import { chromium } from 'playwright-core';
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';

const [mode, hone, db, target, artifacts] = process.argv.slice(2);
let failures = 0;
function check(ok, what) {
  if (ok) return;
  failures++;
  console.log('FAIL ' + what);
}

function show(run) {
  return JSON.parse(execFileSync(hone, ['show', String(run), '--db', db, '--json'], { encoding: 'utf8' }));
}

// The points a store says a run's curve has: every step after the first success, with the best so far.
function expectedPoints(run) {
  return show(run).trajectory.filter((s) => s.best_so_far > 0).map((s) => ({ step: s.step, value: s.best_so_far }));
}

async function drawnPoints(page, run) {
  return page.$$eval(`svg.hone-curve circle[data-run="${run}"]`, (cs) =>
    cs.map((c) => ({ step: Number(c.dataset.step), value: Number(c.dataset.value) })));
}

function samePoints(got, want, what) {
  check(got.length === want.length, `${what}: ${got.length} points drawn, the store has ${want.length}`);
  for (let i = 0; i < Math.min(got.length, want.length); i++)
    if (got[i].step !== want[i].step || Math.abs(got[i].value - want[i].value) > 1e-9 * Math.abs(want[i].value)) {
      check(false, `${what}: point ${i} is step ${got[i].step} = ${got[i].value}, the store has step ` +
        `${want[i].step} = ${want[i].value}`);
      break;
    }
}

// Hostile text from the store (a start file named like markup, a comment holding a script) is shown
// as text: nothing it holds ran or became an element.
async function inert(page, what) {
  check(await page.evaluate(() => window.__pwned === undefined), `${what}: hostile text ran`);
  check(await page.$$eval('img, iframe, object', (e) => e.length) === 0, `${what}: hostile text made elements`);
  check(await page.$$eval('script', (s) => s.every((x) => !x.textContent.includes('__pwned'))),
    `${what}: a hostile script element is in the page`);
  const text = await page.evaluate(() => document.body.innerText);
  check(text.includes('<img src=x onerror=window.__pwned=1>'), `${what}: the hostile text is not shown as text`);
}

async function main() {
  mkdirSync(artifacts, { recursive: true });
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu'] });
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  page.on('pageerror', (e) => check(false, `${mode}: the page threw: ${e.message}`));
  const runs = JSON.parse(execFileSync(hone, ['runs', '--db', db, '--json'], { encoding: 'utf8' }));

  if (mode === 'report') {
    await page.goto('file://' + path.resolve(target));
    for (const r of runs) {
      samePoints(await drawnPoints(page, r.id), expectedPoints(r.id), `report run ${r.id}`);
      const cell = await page.$eval(`table.summary tr[data-run="${r.id}"] td.best-score`, (c) => c.textContent);
      check(cell === (r.best_step === null ? '-' : r.best_score.toFixed(3) + 'x'),
        `report run ${r.id}: the summary's best is ${cell}, the store's ${r.best_score}`);
      const rows = await page.$$eval(`details.run[data-run="${r.id}"] table.steps tr[data-step]`, (t) => t.length);
      check(rows === r.evaluations, `report run ${r.id}: ${rows} step rows, ${r.evaluations} evaluations`);
    }
    const apps = new Set(runs.map((r) => r.app));
    check(await page.$$eval('section.app', (s) => s.length) === apps.size, 'report: one section per app');
    check(await page.$$eval('svg.hone-curve g.reference', (g) => g.every((x) => x.dataset.value === '1')),
      'report: the reference line is at 1.0');
    await page.$$eval('details', (ds) => ds.forEach((d) => { d.open = true; }));
    await inert(page, 'report');
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.screenshot({ path: path.join(artifacts, 'report.png') });
  } else {
    const run = runs[runs.length - 1].id;
    await page.goto(`${target}#run=${run}`);
    const stepRows = () => page.$$eval('#steps tbody tr', (t) => t.length);
    await page.waitForFunction(() => document.querySelectorAll('#steps tbody tr').length >= 2, null,
      { timeout: 60000 });
    const first = await stepRows();
    const runningThen = show(run).status === 'running';
    check(runningThen, 'dashboard: the run had finished before the page showed it (too fast to watch)');
    // The page grows while the run goes on, without a reload.
    await page.waitForFunction((n) => document.querySelectorAll('#steps tbody tr').length > n, first,
      { timeout: 60000 });
    check(await stepRows() > first, 'dashboard: no new steps appeared while the run went on');
    await page.screenshot({ path: path.join(artifacts, 'dashboard.png') });
    // When the run has finished and the page has caught up, the curve is the store's.
    const deadline = Date.now() + 120000;
    while (show(run).status === 'running' && Date.now() < deadline) await page.waitForTimeout(300);
    const total = show(run).trajectory.length;
    await page.waitForFunction((n) => document.querySelectorAll('#steps tbody tr').length === n, total,
      { timeout: 30000 });
    await page.waitForFunction((n) => document.querySelectorAll('svg.hone-curve circle').length > 0 &&
      Number(document.querySelector('#status').dataset.updates) > 0, null, { timeout: 30000 });
    await page.waitForTimeout(1000); // one more refresh: the curve is fetched after the steps
    samePoints(await drawnPoints(page, run), expectedPoints(run), `dashboard run ${run}`);
    const listed = await page.$$eval('#run-table tbody tr', (t) => t.length);
    check(listed === runs.length, `dashboard: ${listed} runs listed, the store has ${runs.length}`);
    await inert(page, 'dashboard');
  }
  await browser.close();
  console.log(`${mode}: ${failures === 0 ? 'ok' : failures + ' failure(s)'}`);
  process.exit(failures === 0 ? 0 : 1);
}

main().catch((e) => {
  console.log('FAIL ' + (e.stack || e));
  process.exit(1);
});
