import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Metric, Registry } from 'prom-client';

/** Every Almanac metric is prefixed so dashboards and alerts can select them at once. */
export type AlmanacMetricName = `almanac_${string}`;

export interface MetricOptions<L extends string> {
  name: AlmanacMetricName;
  help: string;
  labelNames?: readonly L[];
}

export interface HistogramOptions<L extends string> extends MetricOptions<L> {
  buckets?: number[];
}

export interface GaugeOptions<L extends string> extends MetricOptions<L> {
  /** Called on every scrape; fill the gauge here for values cheaper to read than to track. */
  collect?: (gauge: Gauge<L>) => void | Promise<void>;
}

export class MetricTypeError extends Error {
  override readonly name = 'MetricTypeError';
}

/**
 * One prom-client Registry per process (all roles in one process share it). Feature code asks
 * for its metrics by name; asking twice returns the same instance, so two modules (or two roles
 * in the all-in-one process) that record the same metric never collide.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }

  counter<L extends string = never>(opts: MetricOptions<L>): Counter<L> {
    return this.getOrCreate(opts.name, Counter, () =>
      new Counter<L>({ name: opts.name, help: opts.help, labelNames: opts.labelNames ?? [], registers: [this.registry] }),
    );
  }

  gauge<L extends string = never>(opts: GaugeOptions<L>): Gauge<L> {
    const collect = opts.collect;
    return this.getOrCreate(opts.name, Gauge, () =>
      new Gauge<L>({
        name: opts.name,
        help: opts.help,
        labelNames: opts.labelNames ?? [],
        registers: [this.registry],
        ...(collect ? { collect(this: Gauge<L>) { return collect(this); } } : {}),
      }),
    );
  }

  histogram<L extends string = never>(opts: HistogramOptions<L>): Histogram<L> {
    return this.getOrCreate(opts.name, Histogram, () =>
      new Histogram<L>({
        name: opts.name,
        help: opts.help,
        labelNames: opts.labelNames ?? [],
        registers: [this.registry],
        ...(opts.buckets ? { buckets: opts.buckets } : {}),
      }),
    );
  }

  private getOrCreate<M extends Metric<string>>(
    name: string,
    type: abstract new (...args: never[]) => M,
    create: () => M,
  ): M {
    const existing = this.registry.getSingleMetric(name);
    if (existing === undefined) return create();
    if (!(existing instanceof type)) {
      throw new MetricTypeError(`metric ${name} is already registered as another type`);
    }
    return existing;
  }
}
