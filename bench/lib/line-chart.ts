/**
 * Small hand-written SVG line charts for bench/REPORT.md (no chart dependency): one or more
 * panels stacked over a shared x axis (time), each with its own y scale, so a series in the
 * thousands and one that stays near 1 can both be read. Companion to svg-chart.ts (bars).
 */

export interface Series {
  label: string;
  color: string;
  /** [x, y] pairs, x ascending. */
  points: [number, number][];
  /** Draw points as dots instead of a line (e.g. one value per job). */
  dots?: boolean;
  dashed?: boolean;
}

export interface Panel {
  /** The y axis caption, e.g. "running jobs". */
  unit: string;
  series: Series[];
  /** Fixed top of the y scale; default: the largest y, rounded up. */
  yMax?: number;
  /** A dashed horizontal line, e.g. a target or a limit. */
  target?: { value: number; label: string };
}

export interface LineChart {
  title: string;
  /** The x axis caption, e.g. "seconds after the burst was due". */
  xUnit: string;
  panels: Panel[];
  xMin?: number;
  xMax?: number;
  width?: number;
  /** Vertical dashed lines across every panel (e.g. "burst due", "noisy drain ends"). */
  markers?: { x: number; label: string }[];
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const fmt = (n: number) => (Math.abs(n) >= 1000 ? Math.round(n).toLocaleString('en') : String(Math.round(n * 100) / 100));

/** A round number ≥ v (1, 2 or 5 times a power of ten): the top of a y axis. */
function niceCeil(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return ([1, 2, 5, 10].find((m) => m * p >= v) ?? 10) * p;
}

export function lineChartSvg(c: LineChart): string {
  const width = c.width ?? 760;
  const left = 64;
  const right = 16;
  const top = 34;
  const panelH = 150;
  const gap = 46;
  const plotW = width - left - right;
  const all = c.panels.flatMap((p) => p.series.flatMap((s) => s.points.map(([x]) => x)));
  const xMin = c.xMin ?? Math.min(...all, 0);
  const xMax = c.xMax ?? Math.max(...all, xMin + 1);
  const x = (v: number) => left + ((v - xMin) / (xMax - xMin || 1)) * plotW;
  const height = top + c.panels.length * (panelH + gap) + 10;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">${esc(c.title)}</text>`,
  ];
  const xStep = niceCeil((xMax - xMin) / 8);
  c.panels.forEach((p, i) => {
    const y0 = top + i * (panelH + gap) + 14; // top of the plot area (legend above it)
    const yMax = p.yMax ?? niceCeil(Math.max(...p.series.flatMap((s) => s.points.map(([, y]) => y)), p.target?.value ?? 0, 1e-9));
    const y = (v: number) => y0 + panelH - (Math.min(Math.max(v, 0), yMax) / yMax) * panelH;
    // legend
    let lx = left;
    for (const s of p.series) {
      out.push(`<rect x="${lx}" y="${y0 - 14}" width="12" height="4" fill="${s.color}"/>`);
      out.push(`<text x="${lx + 16}" y="${y0 - 9}">${esc(s.label)}</text>`);
      lx += 28 + s.label.length * 6.5;
    }
    // axes and grid
    out.push(`<line x1="${left}" y1="${y0}" x2="${left}" y2="${y0 + panelH}" stroke="#888"/>`);
    out.push(`<line x1="${left}" y1="${y0 + panelH}" x2="${left + plotW}" y2="${y0 + panelH}" stroke="#888"/>`);
    for (const f of [0, 0.5, 1]) {
      const v = yMax * f;
      out.push(`<text x="${left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#555">${fmt(v)}</text>`);
      if (f > 0) out.push(`<line x1="${left}" y1="${y(v).toFixed(1)}" x2="${left + plotW}" y2="${y(v).toFixed(1)}" stroke="#eee"/>`);
    }
    out.push(`<text x="12" y="${y0 + panelH / 2}" fill="#555" transform="rotate(-90 12 ${y0 + panelH / 2})" text-anchor="middle">${esc(p.unit)}</text>`);
    for (let v = Math.ceil(xMin / xStep) * xStep; v <= xMax; v += xStep) {
      out.push(`<text x="${x(v).toFixed(1)}" y="${y0 + panelH + 14}" text-anchor="middle" fill="#555">${fmt(v)}</text>`);
    }
    for (const m of c.markers ?? []) {
      const mx = x(m.x).toFixed(1);
      out.push(`<line x1="${mx}" y1="${y0}" x2="${mx}" y2="${y0 + panelH}" stroke="#999" stroke-dasharray="3 3"/>`);
      if (i === 0) out.push(`<text x="${mx}" y="${y0 + 11}" fill="#777" font-size="10" text-anchor="start" dx="3">${esc(m.label)}</text>`);
    }
    if (p.target) {
      const ty = y(p.target.value).toFixed(1);
      out.push(`<line x1="${left}" y1="${ty}" x2="${left + plotW}" y2="${ty}" stroke="#d62728" stroke-dasharray="4 3"/>`);
      out.push(`<text x="${left + plotW - 4}" y="${Number(ty) - 4}" fill="#d62728" text-anchor="end">${esc(p.target.label)}</text>`);
    }
    for (const s of p.series) {
      const pts = s.points.filter(([px]) => px >= xMin && px <= xMax);
      if (s.dots) {
        for (const [px, py] of pts) out.push(`<circle cx="${x(px).toFixed(1)}" cy="${y(py).toFixed(1)}" r="2.5" fill="${s.color}"/>`);
      } else if (pts.length) {
        const d = pts.map(([px, py], k) => `${k ? 'L' : 'M'}${x(px).toFixed(1)} ${y(py).toFixed(1)}`).join('');
        out.push(`<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.5"${s.dashed ? ' stroke-dasharray="5 3"' : ''}/>`);
      }
    }
  });
  out.push(`<text x="${left + plotW / 2}" y="${height - 8}" text-anchor="middle" fill="#555">${esc(c.xUnit)}</text>`);
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
