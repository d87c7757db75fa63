// The dashboard's page and script. The script writes every text from the store
// with textContent, and inserts the server's own escaped SVG through DOMParser;
// the page's security policy allows no inline script at all.
#include "report/Dashboard.h"

#include <fmt/format.h>

namespace hone::report {

std::string dashboardPage(int pollMs) {
  return fmt::format(R"html(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>hone dashboard</title>
<style>
body {{ font-family: sans-serif; margin: 1em; color: #222; }}
#layout {{ display: flex; gap: 1.5em; align-items: flex-start; }}
#runs {{ min-width: 26em; }} #detail {{ flex: 1; min-width: 0; }}
table {{ border-collapse: collapse; font-size: 0.9em; }}
th, td {{ border: 1px solid #ddd; padding: 0.2em 0.45em; text-align: left; vertical-align: top; }}
th {{ background: #f3f3f3; }} td.num {{ text-align: right; white-space: nowrap; }}
#runs tr.run {{ cursor: pointer; }} #runs tr.selected td {{ background: #e8f0fe; }}
tr.failed td {{ color: #933; }} tr.best td {{ background: #eef7ee; }}
pre {{ background: #f7f7f7; padding: 0.5em; overflow-x: auto; font-size: 0.85em; white-space: pre-wrap; max-height: 24em; }}
td pre {{ background: none; padding: 0; margin: 0; max-height: none; }}
#status {{ color: #777; font-size: 0.85em; }}
</style></head>
<body data-poll-ms="{}">
<h1>hone dashboard</h1>
<p id="status">loading...</p>
<div id="layout">
<div id="runs"><h2>Runs</h2><table id="run-table"><thead><tr><th>run</th><th>app</th><th>agent</th><th>status</th>
<th>evals</th><th>best</th></tr></thead><tbody></tbody></table></div>
<div id="detail"><h2 id="run-title">no run selected</h2><p id="run-summary"></p>
<div id="curve"></div>
<h3>Best candidate so far</h3><p id="best-line"></p><pre id="best"></pre>
<h3>Steps</h3><table id="steps"><thead><tr><th>step</th><th>status</th><th>score</th><th>best so far</th>
<th>rationale</th><th>feedback</th></tr></thead><tbody></tbody></table></div>
</div>
<script src="/dashboard.js"></script>
</body></html>
)html",
                     pollMs);
}

std::string dashboardScript() {
  return R"js('use strict';
(function () {
  const pollMs = Number(document.body.dataset.pollMs) || 1000;
  let selected = null;
  let shownSteps = -1;

  function selectedFromHash() {
    const m = /^#run=(\d+)$/.exec(location.hash);
    return m ? Number(m[1]) : null;
  }

  async function getJson(url) {
    const r = await fetch(url, { cache: 'no-store' });
    const body = await r.json();
    if (!r.ok) throw new Error(body.error || (url + ': HTTP ' + r.status));
    return body;
  }

  function cell(row, text, cls) {
    const c = document.createElement('td');
    c.textContent = text;
    if (cls) c.className = cls;
    row.appendChild(c);
    return c;
  }

  function score(v, relative) {
    if (!(v > 0)) return '-';
    return relative ? v.toFixed(3) + 'x' : String(Number(v.toPrecision(4)));
  }

  function renderRuns(runs) {
    const body = document.querySelector('#run-table tbody');
    body.replaceChildren();
    for (const r of runs) {
      const row = document.createElement('tr');
      row.className = 'run' + (r.id === selected ? ' selected' : '');
      row.dataset.run = r.id;
      cell(row, String(r.id), 'num');
      cell(row, r.app);
      cell(row, r.agent);
      cell(row, r.status);
      cell(row, r.evaluations + '/' + r.iterations, 'num');
      cell(row, score(r.best_score, r.score_relative_to !== ''), 'num');
      row.addEventListener('click', () => { location.hash = '#run=' + r.id; });
      body.appendChild(row);
    }
  }

  async function renderCurve(id) {
    const r = await fetch('/api/runs/' + id + '/curve.svg', { cache: 'no-store' });
    if (!r.ok) return;
    const doc = new DOMParser().parseFromString(await r.text(), 'image/svg+xml');
    const svg = doc.documentElement;
    if (svg.nodeName !== 'svg') return;
    document.getElementById('curve').replaceChildren(document.importNode(svg, true));
  }

  async function renderRun(id) {
    const d = await getJson('/api/runs/' + id);
    const relative = d.baseline > 0;
    const run = d.run;
    document.getElementById('run-title').textContent = d.label + ' on ' + run.app + ' (' + run.machine + ')';
    document.getElementById('run-summary').textContent =
      run.status + ': ' + run.evaluations + ' of ' + run.iterations + ' evaluations, ' + run.failures + ' failed' +
      (run.score_relative_to ? '; scores relative to ' + run.score_relative_to : '');
    if (d.steps.length !== shownSteps) await renderCurve(id);
    const bestLine = document.getElementById('best-line');
    const best = document.getElementById('best');
    if (d.best) {
      bestLine.textContent = 'step ' + d.best.step + ', ' + score(d.best.score, relative) + ': ' + d.best.rationale;
      best.textContent = d.best.artifact;
    } else {
      bestLine.textContent = 'no successful step yet';
      best.textContent = '';
    }
    const body = document.querySelector('#steps tbody');
    body.replaceChildren();
    for (const s of d.steps) {
      const row = document.createElement('tr');
      row.dataset.step = s.step;
      row.className = s.status !== 'ok' ? 'failed' : d.best && d.best.step === s.step ? 'best' : '';
      cell(row, String(s.step), 'num');
      cell(row, s.status);
      cell(row, s.status === 'ok' ? score(s.score, relative) : '-', 'num');
      cell(row, score(s.best_so_far, relative), 'num');
      cell(row, s.rationale);
      const pre = document.createElement('pre');
      pre.textContent = s.feedback;
      cell(row, '').appendChild(pre);
      body.appendChild(row);
    }
    shownSteps = d.steps.length;
  }

  async function refresh() {
    const status = document.getElementById('status');
    try {
      const runs = await getJson('/api/runs');
      const wanted = selectedFromHash();
      const next = wanted !== null ? wanted : runs.length ? runs[runs.length - 1].id : null;
      if (next !== selected) shownSteps = -1;
      selected = next;
      renderRuns(runs);
      if (selected !== null) await renderRun(selected);
      status.textContent = 'updated ' + new Date().toLocaleTimeString() + ' (every ' + pollMs / 1000 + ' s)';
      status.dataset.updates = String(Number(status.dataset.updates || 0) + 1);
    } catch (e) {
      status.textContent = 'cannot read the store: ' + e.message;
    }
  }

  window.addEventListener('hashchange', refresh);
  refresh();
  setInterval(refresh, pollMs);
})();
)js";
}

} // namespace hone::report
