import { type ConsoleViewer, consoleHref } from '../console-viewer';
import { html, type SafeHtml } from './html';

export interface ScheduleRow {
  id: string;
  key: string;
  kind: string;
  cron: string;
  timezone: string;
  paused: boolean;
  /** the next runs as the schedule's own zone shows them (already formatted) */
  nextLocal: string[];
}

/**
 * Schedules in key order: when each runs next in its own zone, and pause or resume. `cursor` is
 * the page shown (undefined: the first), which a pause or resume carries back to.
 */
export function schedulesView(viewer: ConsoleViewer, rows: ScheduleRow[], next: string | null, cursor: string | undefined): SafeHtml {
  const tenantField = viewer.role === 'admin' && viewer.tenant ? html`<input type="hidden" name="tenant" value="${viewer.tenant.id}">` : '';
  const cursorField = cursor !== undefined ? html`<input type="hidden" name="cursor" value="${cursor}">` : '';
  const body = rows.map((s) => {
    const verb = s.paused ? 'resume' : 'pause';
    return html`<tr>
      <td class="key"><a href="${consoleHref(viewer, `/schedules/${s.id}`)}">${s.key}</a></td>
      <td>${s.kind}</td>
      <td><code>${s.cron}</code></td>
      <td>${s.timezone}</td>
      <td>${s.paused ? html`<span class="state state-cancelled">paused</span>` : s.nextLocal.length > 0 ? html`<ul class="plain">${s.nextLocal.map((t) => html`<li>${t}</li>`)}</ul>` : '—'}</td>
      <td><form method="post" action="${consoleHref(viewer, `/schedules/${s.id}/${verb}`).split('?')[0]}">${tenantField}${cursorField}<button type="submit">${s.paused ? 'Resume' : 'Pause'}</button></form></td>
    </tr>`;
  });
  return html`<h1>Schedules</h1>
<table class="rows" data-rows>
  <thead><tr><th>Key</th><th>Kind</th><th>Cron</th><th>Zone</th><th>Next runs (in its zone)</th><th></th></tr></thead>
  <tbody>${body}</tbody>
</table>
${rows.length === 0 ? html`<p class="empty">No schedules.</p>` : ''}
<p class="pager">
  ${cursor !== undefined ? html`<a href="${consoleHref(viewer, '/schedules')}">← First page</a>` : ''}
  ${next ? html`<a href="${consoleHref(viewer, '/schedules', { cursor: next })}" rel="next">Next page →</a>` : ''}
</p>`;
}
