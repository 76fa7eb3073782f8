import { type JobState, watchedOutcome } from '@almanac/domain';
import type { ScheduleView } from '@almanac/persistence';
import type { ScheduleRun } from '../../schedules/schedule-runs.service';
import { type ConsoleViewer, consoleHref } from '../console-viewer';
import { durationMs } from './format';
import { html, type SafeHtml } from './html';

/** Without its own expectWithinSeconds, the strip calls a run late or missed past a minute. */
const LATE_MS = 60_000;

/**
 * What the strip shows of a run: the schedule watch's rule (watchedOutcome, against the
 * schedule's expectation) with `skipped` for a run no job was made for (or cancelled),
 * `removed` for one that ran but whose job retention has removed since (the run's reason says
 * how it ended), `waiting` for one whose expectation has not passed yet, and `running` for one
 * whose run is not over (an attempt runs, or a retry waits: its start is known when an attempt ends).
 */
function runOutcome(r: ScheduleRun, expectMs: number, nowMs: number): 'ran' | 'late' | 'failed' | 'missed' | 'skipped' | 'removed' | 'waiting' | 'running' {
  if (r.state === 'removed') return 'removed';
  if (r.jobId === null) return 'skipped';
  const due = new Date(r.at);
  const outcome = watchedOutcome({ state: r.state as JobState, startedAt: r.startedAt ? new Date(r.startedAt) : null, attempts: r.attempts }, due, expectMs);
  if (outcome === null) return 'skipped';
  if (outcome === 'missed' && nowMs <= due.getTime() + expectMs) return 'waiting';
  return outcome === 'ok' ? 'ran' : outcome;
}

/** One schedule: its last runs as a strip (each a link to its job) and a table, and its next runs. */
export function scheduleView(viewer: ConsoleViewer, s: ScheduleView, runs: ScheduleRun[], nextLocal: string[], now: Date): SafeHtml {
  const expectMs = s.expectWithinSeconds === null ? LATE_MS : s.expectWithinSeconds * 1000;
  const outcomeOf = (r: ScheduleRun) => runOutcome(r, expectMs, now.getTime());
  const cell = (r: ScheduleRun) => {
    const outcome = outcomeOf(r);
    const title = `${r.local} · ${outcome}${r.lateMs !== null ? ` · started ${durationMs(r.lateMs)} after` : ''}${r.reason ? ` · ${r.reason}` : ''}`;
    return r.jobId
      ? html`<a class="run run-${outcome}" href="${consoleHref(viewer, `/jobs/${r.jobId}`)}" title="${title}" aria-label="${title}"></a>`
      : html`<span class="run run-${outcome}" title="${title}" aria-label="${title}"></span>`;
  };
  const rows = [...runs].reverse().map((r) => html`<tr>
      <td>${r.local}</td>
      <td><span class="word-${outcomeOf(r)}">${outcomeOf(r)}</span></td>
      <td class="num">${r.lateMs !== null ? durationMs(r.lateMs) : '—'}</td>
      <td>${r.jobId ? html`<a href="${consoleHref(viewer, `/jobs/${r.jobId}`)}">${r.state}</a>` : (r.reason ?? r.state)}</td>
    </tr>`);
  return html`<p class="crumbs"><a href="${consoleHref(viewer, '/schedules')}">Schedules</a> / ${s.id}</p>
<h1 class="key">${s.key}</h1>
<dl class="facts">
  <dt>Kind</dt><dd>${s.kind}</dd>
  <dt>Cron</dt><dd><code>${s.cron}</code> in ${s.timezone}</dd>
  <dt>Missed runs</dt><dd>${s.missed}</dd>
  <dt>Next runs</dt><dd>${s.paused ? 'paused' : nextLocal.length > 0 ? nextLocal.join(', ') : '—'}</dd>
  ${s.lastError ? html`<dt>Paused by Almanac</dt><dd class="error-text">${s.lastError}</dd>` : ''}
  <dt>Expected to start within</dt><dd>${s.expectWithinSeconds === null ? '—' : `${s.expectWithinSeconds} s`}</dd>
  <dt>Last watched run</dt><dd>${s.lastOutcome === null ? '—' : html`<span class="word-${s.lastOutcome === 'ok' ? 'ran' : s.lastOutcome}">${s.lastOutcome}</span>${s.lastOutcomeAt ? ` (due ${s.lastOutcomeAt.toISOString()})` : ''}`}</dd>
</dl>
<h2>Last ${runs.length} runs</h2>
<p class="runs-strip" aria-label="last runs, oldest first">${runs.map(cell)}</p>
${runs.length === 0 ? html`<p class="empty">No run has come due yet.</p>` : html`<table class="rows">
  <thead><tr><th>Due (its zone)</th><th>Outcome</th><th class="num">Started after</th><th>Job</th></tr></thead>
  <tbody>${rows}</tbody>
</table>`}`;
}
