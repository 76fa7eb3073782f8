import { JOB_STATES } from '@almanac/domain';
import { type ConsoleViewer, consoleHref } from '../console-viewer';
import { relativeTime, utcTime } from './format';
import { html, type SafeHtml } from './html';

export interface JobRow {
  id: string;
  key: string;
  kind: string;
  state: string;
  runAt: string;
  attempts: number;
  maxAttempts: number;
}

/** The search form's values, as typed (datetime-local text for the range, read as UTC). */
export interface JobFilterForm {
  key?: string;
  kind?: string;
  state?: string;
  from?: string;
  to?: string;
}

export function stateBadge(state: string): SafeHtml {
  return html`<span class="state state-${state}">${state}</span>`;
}

function filterForm(viewer: ConsoleViewer, f: JobFilterForm): SafeHtml {
  const options = ['', ...JOB_STATES].map((s) => html`<option value="${s}" ${s === (f.state ?? '') ? html`selected` : ''}>${s || 'any state'}</option>`);
  return html`<form method="get" action="${consoleHref(viewer, '/jobs').split('?')[0]}" class="filters" role="search">
  ${viewer.role === 'admin' && viewer.tenant ? html`<input type="hidden" name="tenant" value="${viewer.tenant.id}">` : ''}
  <label>Key <input name="key" value="${f.key ?? ''}" placeholder="exact key" data-search size="28"></label>
  <label>Kind <input name="kind" value="${f.kind ?? ''}" size="10"></label>
  <label>State <select name="state">${options}</select></label>
  <label>Run time from <input type="datetime-local" name="from" value="${f.from ?? ''}" step="1"></label>
  <label>to <input type="datetime-local" name="to" value="${f.to ?? ''}" step="1"></label>
  <span class="hint">UTC</span>
  <button type="submit">Search</button>
</form>`;
}

/** Jobs by run time, filtered, one keyset page at a time. */
export function jobsView(viewer: ConsoleViewer, f: JobFilterForm, rows: JobRow[], next: string | null, now: Date, paged: boolean): SafeHtml {
  const body = rows.map(
    (j) => html`<tr>
      <td><a href="${consoleHref(viewer, `/jobs/${j.id}`)}">${j.id}</a></td>
      <td class="key">${j.key}</td>
      <td>${j.kind}</td>
      <td>${stateBadge(j.state)}</td>
      <td><time datetime="${j.runAt}">${utcTime(j.runAt)}</time> <span class="muted">${relativeTime(new Date(j.runAt), now)}</span></td>
      <td class="num">${j.attempts}/${j.maxAttempts}</td>
    </tr>`,
  );
  const keep = { kind: f.kind, state: f.state, from: f.from, to: f.to };
  return html`<h1>Jobs</h1>
${filterForm(viewer, f)}
<table class="rows" data-rows>
  <thead><tr><th>Id</th><th>Key</th><th>Kind</th><th>State</th><th>Run time</th><th class="num">Attempts</th></tr></thead>
  <tbody>${body}</tbody>
</table>
${rows.length === 0 ? html`<p class="empty">${next ? 'No match among the jobs read so far (a page reads a bounded stretch); the next page reads on.' : 'No jobs match.'}</p>` : ''}
<p class="pager">
  ${paged ? html`<a href="${consoleHref(viewer, '/jobs', keep)}">← First page</a>` : ''}
  ${next ? html`<a href="${consoleHref(viewer, '/jobs', { ...keep, cursor: next })}" rel="next">Next page →</a>` : ''}
</p>`;
}
