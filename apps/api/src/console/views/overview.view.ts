import type { BoundedCount, MinuteFigures, RecentExecutions, StateCounts } from '@almanac/persistence';
import { type ConsoleViewer, consoleHref } from '../console-viewer';
import { boundedCount, count, durationMs, relativeTime, utcTime } from './format';
import { html, type SafeHtml } from './html';
import { type JobRow, stateBadge } from './jobs.view';
import { sparkline } from './sparkline';

export interface OverviewData {
  now: Date;
  /** the state counts' window: jobs due in the last this-many hours */
  windowHours: number;
  states: StateCounts;
  dueHour: BoundedCount;
  dueDay: BoundedCount;
  /** executions and lag per minute of the jobs due in the sparklines' span */
  recent: RecentExecutions;
  /** the sparklines' span in minutes, ending now */
  spanMinutes: number;
  dead: JobRow[];
}

const SHOWN_STATES = ['queued', 'running', 'succeeded', 'dead', 'cancelled'] as const;

/** One value per minute of the span (missing minutes: 0 executions, no lag). */
function perMinute(d: OverviewData, pick: (m: MinuteFigures) => number | null, empty: number | null): (number | null)[] {
  const end = Math.floor(d.now.getTime() / 60_000);
  const byMinute = new Map(d.recent.minutes.map((m) => [Math.floor(m.minute.getTime() / 60_000), m]));
  return Array.from({ length: d.spanMinutes }, (_, i) => {
    const m = byMinute.get(end - d.spanMinutes + 1 + i);
    return m ? pick(m) : empty;
  });
}

function stat(label: string, value: string, href?: string): SafeHtml {
  return html`<div class="stat"><span class="label">${label}</span>${href ? html`<a class="value" href="${href}">${value}</a>` : html`<span class="value">${value}</span>`}</div>`;
}

/** The tenant's day at a glance, from its own rows. */
export function overviewView(viewer: ConsoleViewer, d: OverviewData): SafeHtml {
  // The list behind a count covers the count's window exactly (datetime-local text, read as UTC).
  const window = { from: new Date(d.now.getTime() - d.windowHours * 3600_000).toISOString().slice(0, 19), to: d.now.toISOString().slice(0, 19) };
  const states = SHOWN_STATES.map((s) => stat(s, count(d.states.counts[s] ?? 0), consoleHref(viewer, '/jobs', { state: s, ...window })));
  const executions = perMinute(d, (m) => m.executions, 0);
  const lag = perMinute(d, (m) => m.lagP95Ms, null);
  const total = executions.reduce<number>((a, b) => a + (b ?? 0), 0);
  const lags = d.recent.minutes.map((m) => m.lagP95Ms).filter((v): v is number => v !== null);
  const worstLag = lags.length > 0 ? Math.max(...lags) : null;
  const medians = d.recent.minutes.map((m) => m.lagP50Ms).filter((v): v is number => v !== null).sort((a, b) => a - b);
  const typicalLag = medians.length > 0 ? medians[medians.length >> 1] : null;
  const deadRows = d.dead.map(
    (j) => html`<tr>
      <td><a href="${consoleHref(viewer, `/jobs/${j.id}`)}">${j.id}</a></td>
      <td class="key">${j.key}</td>
      <td>${j.kind}</td>
      <td>${stateBadge(j.state)}</td>
      <td><time datetime="${j.runAt}">${utcTime(j.runAt)}</time> <span class="muted">${relativeTime(new Date(j.runAt), d.now)}</span></td>
    </tr>`,
  );
  return html`<h1>Overview</h1>
<section aria-label="Coming due" class="stats">
  ${stat('due in the next hour', boundedCount(d.dueHour))}
  ${stat('due in the next day', boundedCount(d.dueDay))}
</section>
<h2>Jobs due in the last ${d.windowHours} h, by state${d.states.capped ? html` <span class="muted">(the newest ${count(d.states.read)} read)</span>` : ''}</h2>
<section class="stats">${states}</section>
<h2>Jobs due in the last ${d.spanMinutes} minutes${d.recent.capped ? html` <span class="muted">(the newest ${count(d.recent.read)} read, each job's newest ${d.recent.attemptsPerJob} attempts)</span>` : ''}</h2>
<section class="stats">
  <div class="stat wide"><span class="label">executions per minute · ${count(total)} in all</span>${sparkline(executions, `executions per minute over the last ${d.spanMinutes} minutes`)}</div>
  <div class="stat wide"><span class="label">start lag p95 per minute · worst ${worstLag === null ? '—' : durationMs(worstLag)} · typical (p50) ${typicalLag === null ? '—' : durationMs(typicalLag)}</span>${sparkline(lag, `start lag p95 per minute over the last ${d.spanMinutes} minutes`)}</div>
</section>
<h2>Dead jobs to look at</h2>
${d.dead.length === 0
    ? html`<p class="empty">None ${d.states.capped ? html`among the newest ${count(d.states.read)} jobs due` : html``} in the last ${d.windowHours} h.</p>`
    : html`<table class="rows" data-rows><thead><tr><th>Id</th><th>Key</th><th>Kind</th><th>State</th><th>Run time</th></tr></thead><tbody>${deadRows}</tbody></table>
<p class="pager"><a href="${consoleHref(viewer, '/jobs', { state: 'dead', ...window })}">All dead jobs →</a></p>`}`;
}
