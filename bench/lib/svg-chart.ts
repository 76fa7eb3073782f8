/**
 * Small hand-written SVG bar charts for bench/REPORT.md (no chart dependency). Horizontal bars,
 * one per row, with an optional min-max whisker and an optional dashed target line.
 */

export interface Bar {
  label: string;
  value: number;
  min?: number;
  max?: number;
  /** Text printed after the bar; defaults to the value. */
  text?: string;
  color?: string;
}

export interface BarChart {
  title: string;
  /** Axis caption, e.g. "bytes" or "jobs/s". */
  unit: string;
  bars: Bar[];
  target?: { value: number; label: string };
  /** Log scale for values that differ by orders of magnitude (e.g. Almanac vs BullMQ memory). */
  log?: boolean;
  width?: number;
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (n: number) => (Math.abs(n) >= 100 ? Math.round(n).toLocaleString('en') : String(Math.round(n * 10) / 10));

export function barChartSvg(c: BarChart): string {
  const width = c.width ?? 720;
  const labelW = 220;
  const textW = 150;
  const rowH = 28;
  const top = 36;
  const plotW = width - labelW - textW - 10;
  const height = top + c.bars.length * rowH + 34;
  const values = c.bars.flatMap((b) => [b.value, b.max ?? b.value]).concat(c.target ? [c.target.value] : []);
  const hi = Math.max(...values, 1e-9);
  const positive = values.filter((v) => v > 0);
  const lo = c.log ? Math.min(...positive, hi) / 2 : 0;
  const x = (v: number) => {
    if (!c.log) return labelW + (Math.max(0, v) / hi) * plotW;
    const f = (Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo) || 1);
    return labelW + f * plotW;
  };
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">${esc(c.title)}</text>`,
  ];
  c.bars.forEach((b, i) => {
    const y = top + i * rowH;
    const w = Math.max(1, x(b.value) - labelW);
    out.push(`<text x="${labelW - 8}" y="${y + 17}" text-anchor="end">${esc(b.label)}</text>`);
    out.push(`<rect x="${labelW}" y="${y + 5}" width="${w.toFixed(1)}" height="${rowH - 10}" fill="${b.color ?? '#4c78a8'}"/>`);
    if (b.min !== undefined && b.max !== undefined && b.max > b.min) {
      const cy = y + rowH / 2;
      out.push(`<path d="M${x(b.min).toFixed(1)} ${cy}H${x(b.max).toFixed(1)}M${x(b.min).toFixed(1)} ${cy - 5}v10M${x(b.max).toFixed(1)} ${cy - 5}v10" stroke="#222" fill="none"/>`);
    }
    const tx = Math.max(x(b.value), b.max !== undefined ? x(b.max) : 0) + 6;
    out.push(`<text x="${tx.toFixed(1)}" y="${y + 17}">${esc(b.text ?? fmt(b.value))}</text>`);
  });
  const axisY = top + c.bars.length * rowH + 4;
  out.push(`<line x1="${labelW}" y1="${top}" x2="${labelW}" y2="${axisY}" stroke="#888"/>`);
  out.push(`<text x="${labelW}" y="${axisY + 16}" fill="#555">${esc(c.unit)}${c.log ? ' (log scale)' : ''}</text>`);
  if (c.target) {
    const tx = x(c.target.value).toFixed(1);
    out.push(`<line x1="${tx}" y1="${top - 4}" x2="${tx}" y2="${axisY}" stroke="#d62728" stroke-dasharray="4 3"/>`);
    out.push(`<text x="${tx}" y="${axisY + 16}" fill="#d62728" text-anchor="middle">${esc(c.target.label)}</text>`);
  }
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
