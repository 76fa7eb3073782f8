#!/usr/bin/env node
// @ts-check
'use strict';
// The query of a worker pool's ScaledObject (issue 19), in one place. k8s/manifests.spec.ts
// checks that every ScaledObject carries exactly this query for its pool, lead and window (its
// almanac.io/scaling-lead and almanac.io/scaling-window annotations). To change them, print the
// query and paste it into the ScaledObject (or the pool's patch):
//   node k8s/worker/scaling-query.js --pool http --lead 10m --window 5m
//
// KEDA asks for ceil(value / threshold) replicas (threshold 0.8: ~80 % busy at a steady rate). The
// value is the larger of two terms, in replicas
// of measured throughput T (pool:almanac_replica_throughput:per_second, a recording rule in
// k8s/monitoring/rules/almanac.rules.yml):
//   now     the backlog (due jobs waiting in the pool's ready lists) and the jobs in flight
//           (running on its workers), run within one window;
//   coming  the rate of work arriving: the jobs coming due in the window after the lead time
//           (the schedule; held for the lead time and a minute by max_over_time, so a spike
//           keeps its replicas until it is due, when the now term takes over), plus the jobs
//           that reached the pool in the last minute without having been announced a minute
//           before (enqueued to run now). The dispatcher puts every job into the ready lists
//           as it comes due, so almanac_dispatched_total counts every arrival (backlog growth
//           is part of it, not on top of it): arrivals in the last minute, less what was due
//           within a minute a minute ago.
// Steady load at r jobs/s, scheduled or not, reads r / T; a spike of n jobs reads n / (T × window)
// for a lead time (plus up to one window) before it is due.
// Lead and lead + window must be windows of almanac_jobs_due (libs/domain/src/due-soon.ts).
// Without T (the rules not installed, no worker reporting a default) the query answers nothing;
// the ScaledObject sets ignoreNullValues "false" so KEDA's fallback replicas apply.

/**
 * The schedule's part is held a minute past the lead time: the due gauge (the promoter's, every
 * 15 s) and the backlog gauge (the dispatcher's, every second) are sampled apart, and the spike
 * must not fall between them as it turns from due to backlog (put into the pool's ready lists at
 * its due time).
 */
const HOLD_MARGIN_S = 60;

/** @param {string} w a duration like 5m or 1h @returns {number} seconds */
function seconds(w) {
  const m = /^(\d+)(m|h)$/.exec(w);
  if (!m) throw new Error(`not a window: ${w} (use minutes or hours, like 5m or 1h)`);
  return Number(m[1]) * (m[2] === 'h' ? 3600 : 60);
}

/** @param {number} s seconds @returns {string} the almanac_jobs_due window label */
function label(s) {
  return s % 3600 === 0 ? `${s / 3600}h` : `${s / 60}m`;
}

/**
 * @param {{ pool: string; lead: string; window: string }} o
 * @returns {string}
 */
function scalingQuery({ pool, lead, window }) {
  const leadS = seconds(lead);
  const windowS = seconds(window);
  const p = `pool="${pool}"`;
  const throughput = `max(pool:almanac_replica_throughput:per_second{${p}})`;
  const due = (/** @type {number} */ s) => `max(almanac_jobs_due{${p},within="${label(s)}"})`;
  return [
    'max(',
    '  label_replace(',
    `    (max(almanac_pool_backlog{${p}}) + max(almanac_pool_in_flight{${p}}))`,
    `      / (${throughput} * ${windowS}),`,
    '    "term", "now", "", "")',
    '  or',
    '  label_replace(',
    '    (',
    `      max_over_time(((${due(leadS + windowS)} - ${due(leadS)}) or vector(0))[${label(leadS + HOLD_MARGIN_S)}:15s]) / ${windowS}`,
    '      + clamp_min(',
    `          (sum(increase(almanac_dispatched_total{${p}}[1m])) or vector(0))`,
    `          - (max(almanac_jobs_due{${p},within="1m"} offset 1m) or vector(0)),`,
    '        0) / 60',
    `    ) / ${throughput},`,
    '    "term", "coming", "", "")',
    ')',
  ].join('\n');
}

/** The due windows a query for this lead and window reads. @param {string} lead @param {string} window */
function windowsRead(lead, window) {
  return ['1m', label(seconds(lead)), label(seconds(lead) + seconds(window))];
}

module.exports = { scalingQuery, windowsRead, seconds };

if (require.main === module) {
  const arg = (/** @type {string} */ name, /** @type {string} */ fallback) => {
    const i = process.argv.indexOf(`--${name}`);
    return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
  };
  process.stdout.write(`${scalingQuery({ pool: arg('pool', 'default'), lead: arg('lead', '5m'), window: arg('window', '5m') })}\n`);
}
