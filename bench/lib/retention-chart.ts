import type { LineChart } from './line-chart';

/** One simulated day of bench/retention.ts, as far as the chart needs it. */
export interface RetentionDay {
  day: number;
  ingestPerSec: number;
  promotePerSec: number | null;
  dbBytes: number;
  jobsBytes: number;
  attemptsBytes: number;
  retiredBytes: number;
  /** Occurrence rows of the schedules kept (absent or 0: no schedules in the run). */
  scheduleRows?: number;
}

/** The chart's file: one per part (a run with schedules is the part retention-schedules). */
export function retentionChartFile(schedules: number): string {
  return schedules > 0 ? 'retention-schedules.svg' : 'retention.svg';
}

/** Database size and the day's ingest and promotion rates over the simulated days. */
export function retentionChart(inputs: { days: number; perDay: number; retentionDays: number }, days: readonly RetentionDay[]): LineChart {
  const x = (f: (d: RetentionDay) => number) => days.map((d) => [d.day, f(d)] as [number, number]);
  const gib = (b: number) => Math.round((b / 2 ** 30) * 1000) / 1000;
  return {
    title: `${inputs.days} simulated days of ${inputs.perDay.toLocaleString('en')} jobs with ${inputs.retentionDays}-day retention`,
    xUnit: 'simulated day',
    markers: [{ x: inputs.retentionDays + 2, label: 'first removals' }],
    panels: [
      {
        unit: 'GiB',
        series: [
          { label: 'database', color: '#1f77b4', points: x((d) => gib(d.dbBytes)) },
          { label: 'jobs', color: '#ff7f0e', points: x((d) => gib(d.jobsBytes)) },
          { label: 'job_attempts', color: '#2ca02c', points: x((d) => gib(d.attemptsBytes)) },
          { label: 'retired_keys', color: '#d62728', points: x((d) => gib(d.retiredBytes)) },
        ],
      },
      {
        unit: 'jobs/s',
        series: [
          { label: 'ingest', color: '#1f77b4', points: x((d) => d.ingestPerSec) },
          { label: 'promotion', color: '#ff7f0e', points: days.filter((d) => d.promotePerSec !== null && d.day > 1).map((d) => [d.day, d.promotePerSec!] as [number, number]) },
        ],
      },
      ...(days.some((d) => (d.scheduleRows ?? 0) > 0)
        ? [{ unit: 'rows', series: [{ label: 'schedule occurrences kept', color: '#9467bd', points: x((d) => d.scheduleRows ?? 0) }] }]
        : []),
    ],
  };
}
