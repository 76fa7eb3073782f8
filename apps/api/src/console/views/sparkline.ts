import { html, type SafeHtml } from './html';

const WIDTH = 240;
const HEIGHT = 40;

/**
 * An inline SVG line of one value per step (null: no data, the line breaks there). Drawn on the
 * server: no chart library, nothing for the page's script to do, and it prints.
 */
export function sparkline(values: (number | null)[], label: string): SafeHtml {
  const max = Math.max(1, ...values.map((v) => v ?? 0));
  const step = values.length > 1 ? WIDTH / (values.length - 1) : WIDTH;
  const segments: string[][] = [[]];
  values.forEach((v, i) => {
    if (v === null) {
      if (segments[segments.length - 1].length > 0) segments.push([]);
      return;
    }
    const y = HEIGHT - 2 - (v / max) * (HEIGHT - 4);
    segments[segments.length - 1].push(`${(i * step).toFixed(1)},${y.toFixed(1)}`);
  });
  const lines = segments
    .filter((s) => s.length > 0)
    .map((s) => (s.length === 1 ? html`<circle cx="${s[0].split(',')[0]}" cy="${s[0].split(',')[1]}" r="1.5"></circle>` : html`<polyline points="${s.join(' ')}"></polyline>`));
  return html`<svg class="spark" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="${WIDTH}" height="${HEIGHT}" role="img" aria-label="${label}"><title>${label}</title>${lines}</svg>`;
}
