import type { LineChart, Series } from './line-chart';
import type { ScaledObjectSpec } from './autoscale-scaledobject';

/** One evaluation of the ScaledObject's query (every pollingInterval), with what it read. */
export interface AutoscaleSample {
  /** Seconds after T, the instant the spike is due (negative: before it). */
  atS: number;
  /** The query's value as KEDA reads it: null when the answer was empty (KEDA takes 0) or an error. */
  value: number | null;
  answer: 'value' | 'empty' | 'error';
  error?: string;
  /** Replicas the HPA would ask for: ceil(value / threshold) within min and max. */
  desired: number;
  /** The query's terms (its outer max() unwrapped), by their labels. */
  terms: Record<string, number>;
  /** max(almanac_jobs_due{pool="default"}) by `within`. */
  due: Record<string, number>;
  /** max(almanac_pool_backlog) + max(almanac_pool_in_flight), pool default. */
  backlogInFlight: number | null;
  throughput: number | null;
  executionsPerSecond: number | null;
}

/** bench/autoscale.ts's JSON document (the part's `raw`). */
export interface AutoscaleDoc {
  bench: 'autoscale';
  at: string;
  code: { root: string; commit: string };
  inputs: { spike: number; leadMinutes: number; capacityJobs: number; workers: number; concurrency: number; sleepMs: number; connections: number; floorMinutes: number };
  scaledObject: ScaledObjectSpec;
  ruleGroups: string[];
  capacity: {
    jobs: number;
    postSeconds: number;
    ingestPerSecond: number;
    drainSeconds: number;
    /** Executions per second per worker over the phase, from job_attempts: a cross-check. */
    perReplicaFromAttempts: number;
    /** pool:almanac_replica_throughput:per_second after the phase (null: no such series). */
    throughputRule: number | null;
    defaultThroughput: number | null;
    /** Samples of the saturated per-replica rate Prometheus recorded, and their median. */
    saturatedSamples: number;
    saturatedMedian: number | null;
    /** Which number the ScaledObject's query divides by. */
    stands: 'measured' | 'default' | 'none';
  };
  spike: { jobs: number; dueAt: string; /** Seconds after T (negative). */ postStartS: number; postSeconds: number; postEndBeforeWindowS: number; firstStartS: number; lastFinishS: number; succeeded: number };
  summary: {
    neededReplicas: number;
    throughputUsed: number;
    /** One evaluation before the first POST. */
    floorBefore: { value: number | null; desired: number; atS: number };
    firstAskBeforeTS: number | null;
    /** Polls between the first ask and T that asked for fewer than the needed replicas. */
    pollsBelowNeededBeforeT: number;
    minDesiredAskToT: number | null;
    peakDesired: number;
    peakValue: number | null;
    backToFloorAfterTS: number | null;
    backToFloorAfterDrainS: number | null;
    polls: number;
    emptyAnswers: number;
    errorAnswers: number;
  };
  samples: AutoscaleSample[];
}

const WITHIN_COLORS: Record<string, string> = { '1m': '#f58518', '5m': '#e45756', '10m': '#72b7b2', '15m': '#54a24b', '1h': '#b279a2' };
const thousands = (n: number | null | undefined) => (n === null || n === undefined ? n : n / 1000);
const minutesOf = (within: string) => Number.parseFloat(within) * (within.endsWith('h') ? 60 : 1);

/** Desired replicas against time, next to the due curve, T marked (bench/charts/autoscale.svg). */
export function autoscaleChart(d: AutoscaleDoc): LineChart {
  const pts = (f: (s: AutoscaleSample) => number | null | undefined): [number, number][] =>
    d.samples.flatMap((s) => {
      const v = f(s);
      return v === null || v === undefined ? [] : [[s.atS, v] as [number, number]];
    });
  // KEDA holds each answer until its next poll: replicas are drawn as steps, not slopes.
  const steps = (points: [number, number][]): [number, number][] => points.flatMap(([x, y], i) => (i ? [[x, points[i - 1][1]], [x, y]] : [[x, y]]) as [number, number][]);
  const termNames = [...new Set(d.samples.flatMap((s) => Object.keys(s.terms)))];
  const termColors = ['#9ecae9', '#ff9d98', '#bab0ac'];
  const terms: Series[] = termNames.map((name, i) => ({ label: `${name} / threshold`, color: termColors[i % termColors.length], dashed: true, points: steps(pts((s) => (s.terms[name] ?? 0) / d.scaledObject.threshold)) }));
  const withins = [...new Set(d.samples.flatMap((s) => Object.keys(s.due)))].sort((a, b) => minutesOf(a) - minutesOf(b));
  const so = d.scaledObject;
  return {
    title: `${d.spike.jobs.toLocaleString('en')} jobs due at T, scheduled ${d.inputs.leadMinutes} min ahead: the ScaledObject's desired replicas`,
    width: 900,
    // Room after the last poll for the "drained" marker's label.
    xMax: (d.samples[d.samples.length - 1]?.atS ?? 0) + 60,
    xUnit: `seconds after T (one evaluation of the query every ${so.pollingSeconds} s)`,
    markers: [
      { x: -d.inputs.leadMinutes * 60, label: `T − ${d.inputs.leadMinutes} min` },
      { x: -300, label: 'T − 5 min' },
      { x: 0, label: 'T' },
      { x: d.spike.lastFinishS, label: 'drained' },
    ].filter((m, i, all) => m.x >= (d.samples[0]?.atS ?? 0) && all.findIndex((o) => o.x === m.x) === i),
    panels: [
      {
        unit: 'replicas',
        series: [{ label: `desired replicas (min ${so.minReplicas}, max ${so.maxReplicas})`, color: '#4c78a8', points: steps(pts((s) => s.desired)) }, ...terms],
        target: { value: d.summary.neededReplicas, label: `needed: ${d.summary.neededReplicas}` },
        yMax: Math.max(d.summary.peakDesired, d.summary.neededReplicas) + 1,
      },
      {
        // In thousands: six-digit tick labels would run into the axis caption.
        unit: 'thousand jobs',
        series: [
          ...withins.map((w) => ({ label: `due within ${w}`, color: WITHIN_COLORS[w] ?? '#888', points: pts((s) => thousands(s.due[w])) })),
          { label: 'backlog + in flight', color: '#333333', points: pts((s) => thousands(s.backlogInFlight)) },
        ],
      },
    ],
  };
}
