export interface Spread {
  median: number;
  min: number;
  max: number;
  runs: number[];
}

export function spread(values: number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { median: Math.round(median * 1000) / 1000, min: sorted[0], max: sorted[sorted.length - 1], runs: values };
}

export function round(n: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}
