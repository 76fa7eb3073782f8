import { type jobDetail } from '../../jobs/job-view';
import { type ConsoleViewer, consoleHref } from '../console-viewer';
import { durationMs, prettyJson, relativeTime, utcTime } from './format';
import { html, type SafeHtml } from './html';
import { stateBadge } from './jobs.view';

/** A job as `GET /v1/jobs/:id` answers it: the console shows what the API would. */
export type JobDetailView = ReturnType<typeof jobDetail>;

/** What can be done to a job in its state (the API decides again; this only offers it). */
function actions(viewer: ConsoleViewer, j: JobDetailView): SafeHtml {
  const tenantField = viewer.role === 'admin' && viewer.tenant ? html`<input type="hidden" name="tenant" value="${viewer.tenant.id}">` : '';
  const action = (verb: string) => consoleHref(viewer, `/jobs/${j.id}/${verb}`).split('?')[0];
  const open = j.state === 'scheduled' || j.state === 'queued';
  const forms: SafeHtml[] = [];
  if (open) {
    forms.push(html`<form method="post" action="${action('cancel')}" data-confirm="Cancel job ${j.key}?">${tenantField}
      <button type="submit" class="danger">Cancel job</button></form>`);
    forms.push(html`<form method="post" action="${action('reschedule')}">${tenantField}
      <label>New run time (UTC) <input type="datetime-local" name="runAt" step="1" value="${j.runAt.slice(0, 19)}" required></label>
      <button type="submit">Reschedule</button></form>`);
  }
  if (j.state === 'dead') {
    forms.push(html`<form method="post" action="${action('retry')}">${tenantField}
      <button type="submit">Retry (one more attempt)</button></form>`);
  }
  return forms.length > 0 ? html`<section class="actions" aria-label="Actions">${forms}</section>` : html``;
}

/**
 * Each attempt as a bar on one time axis from the run time to the last finish, so waits,
 * backoffs and slow runs are seen at a glance; the table beside it has the exact figures.
 */
function timeline(j: JobDetailView, now: Date): SafeHtml {
  if (j.history.length === 0) return html`<p class="empty">No attempt yet.</p>`;
  const start = Math.min(new Date(j.runAt).getTime(), ...j.history.map((a) => new Date(a.startedAt).getTime()));
  const end = Math.max(...j.history.map((a) => (a.finishedAt ? new Date(a.finishedAt) : now).getTime()), start + 1);
  const pct = (t: number) => ((100 * (t - start)) / (end - start)).toFixed(2);
  const rows = j.history.map((a) => {
    const s = new Date(a.startedAt).getTime();
    const f = (a.finishedAt ? new Date(a.finishedAt) : now).getTime();
    const width = Math.max(0.5, Number(pct(f)) - Number(pct(s)));
    return html`<tr>
      <td class="num">${a.attempt}</td>
      <td><svg class="bar-track" viewBox="0 0 100 6" preserveAspectRatio="none" aria-hidden="true"><rect class="bar outcome-${a.outcome ?? 'running'}" x="${pct(s)}" width="${width.toFixed(2)}" height="6"></rect></svg></td>
      <td><time datetime="${a.startedAt}">${utcTime(a.startedAt)}</time></td>
      <td class="num">${durationMs(f - s)}${a.finishedAt ? '' : ' so far'}</td>
      <td>${a.outcome ?? 'running'}</td>
      <td>${a.errorCode ? html`<code>${a.errorCode}</code> ${a.error}` : ''}</td>
    </tr>`;
  });
  return html`<table class="rows timeline">
  <thead><tr><th class="num">#</th><th>Timeline</th><th>Started</th><th class="num">Took</th><th>Outcome</th><th>Error</th></tr></thead>
  <tbody>${rows}</tbody>
</table>`;
}

/** Which of a job's attempts a page shows: the newest (`from` null) or an older page; `older` the cursor of the next. */
export interface AttemptsShown {
  from: string | null;
  older: string | null;
}

function attemptLinks(viewer: ConsoleViewer, j: JobDetailView, shown: AttemptsShown): SafeHtml {
  const links: SafeHtml[] = [];
  if (shown.from !== null) links.push(html`<a href="${consoleHref(viewer, `/jobs/${j.id}`)}">Newest attempts</a>`);
  if (shown.older !== null) links.push(html`<a href="${consoleHref(viewer, `/jobs/${j.id}`, { attempts: shown.older })}">Older attempts</a>`);
  return links.length > 0 ? html`<p class="pager">${links}</p>` : html``;
}

/** One job: what it is, what it did (a page of its attempts), and what can be done to it. */
export function jobView(viewer: ConsoleViewer, j: JobDetailView, now: Date, shown: AttemptsShown): SafeHtml {
  return html`<p class="crumbs"><a href="${consoleHref(viewer, '/jobs')}">Jobs</a> / ${j.id}</p>
<h1 class="key">${j.key}</h1>
<dl class="facts">
  <dt>State</dt><dd>${stateBadge(j.state)}</dd>
  <dt>Kind</dt><dd>${j.kind}</dd>
  <dt>Run time</dt><dd><time datetime="${j.runAt}">${utcTime(j.runAt)}</time> <span class="muted">${relativeTime(new Date(j.runAt), now)}</span></dd>
  <dt>Attempts</dt><dd>${j.attempts} of ${j.maxAttempts}</dd>
  <dt>Created</dt><dd><time datetime="${j.createdAt}">${utcTime(j.createdAt)}</time></dd>
  <dt>Finished</dt><dd>${j.finishedAt ? html`<time datetime="${j.finishedAt}">${utcTime(j.finishedAt)}</time>` : '—'}</dd>
  ${j.progress ? html`<dt>Progress</dt><dd class="progress"><meter min="0" max="100" value="${j.progress.percent}"></meter> ${j.progress.percent} %${j.progress.note ? html` · ${j.progress.note}` : ''} <span class="muted">attempt ${j.progress.attempt}, ${relativeTime(new Date(j.progress.at), now)}</span></dd>` : ''}
  <dt>Id</dt><dd><code>${j.id}</code></dd>
</dl>
${actions(viewer, j)}
${j.lastError ? html`<h2>Last error</h2><p class="error-text"><code>${j.lastErrorCode ?? ''}</code> ${j.lastError}</p>` : ''}
<h2>Attempts${shown.from !== null ? ' (older)' : ''}</h2>
${timeline(j, now)}
${attemptLinks(viewer, j, shown)}
<div class="columns">
  <section><h2>Payload</h2><pre>${prettyJson(j.payload)}</pre></section>
  <section><h2>Result</h2><pre>${prettyJson(j.result)}</pre></section>
</div>`;
}
