/**
 * Just enough PromQL reading to say which series and labels an expression names: no parser
 * dependency, and the expressions we write are plain (selectors, functions, aggregations).
 */
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'inf', 'nan', 'Inf', 'NaN']);
const GROUPING = /\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g;

export interface PromqlRefs {
  /** Series names (metric names as written, histogram suffixes included). */
  series: string[];
  /** Label matchers in `{…}`, per series, with their operator and (unquoted) value. */
  matchers: { series: string; label: string; op: string; value: string }[];
  /** Label names in by/without/on/ignoring/group_* clauses. */
  grouping: string[];
  /** Labels the expression makes itself: label_replace's destination. */
  created: string[];
}

/** The destination label (second argument) of every label_replace call. */
function labelReplaceTargets(expr: string): string[] {
  const out: string[] = [];
  for (const m of expr.matchAll(/\blabel_replace\s*\(/g)) {
    let depth = 0;
    let commas = 0;
    for (let i = m.index + m[0].length; i < expr.length; i++) {
      const c = expr[i];
      if (c === '(' || c === '[' || c === '{') depth++;
      else if (c === ')' || c === ']' || c === '}') {
        if (depth-- === 0) break;
      } else if (c === ',' && depth === 0 && ++commas === 1) {
        const dst = /^\s*"([a-zA-Z_][a-zA-Z0-9_]*)"/.exec(expr.slice(i + 1));
        if (dst) out.push(dst[1]);
        break;
      }
    }
  }
  return out;
}

/** Grafana's interval variables become a plain duration so the rest reads as PromQL. */
export function withoutGrafanaVariables(expr: string): string {
  return expr.replace(/\$__(rate_interval|interval|range)\b|\$\{__(rate_interval|interval|range)\}/g, '5m');
}

export function promqlRefs(rawExpr: string): PromqlRefs {
  let expr = withoutGrafanaVariables(rawExpr).replace(/#[^\n]*/g, '');
  const created = labelReplaceTargets(expr);
  const matchers: PromqlRefs['matchers'] = [];
  // Selector with matchers: name{a="x", b=~"y"}; a bare {…} (no name) is read too.
  expr = expr.replace(/([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{([^}]*)\}/g, (_m, name: string | undefined, body: string) => {
    for (const lm of body.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')/g)) {
      matchers.push({ series: name ?? '', label: lm[1], op: lm[2], value: lm[3].slice(1, -1) });
    }
    return ` ${name ?? ''} `;
  });
  const grouping: string[] = [];
  expr = expr.replace(GROUPING, (_m, _kw: string, labels: string) => {
    grouping.push(...labels.split(',').map((l) => l.trim()).filter((l) => l !== ''));
    return ' ';
  });
  expr = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ');
  const series: string[] = [];
  for (const m of expr.matchAll(/(?<![A-Za-z0-9_:.])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const word = m[1];
    if (m[2] !== undefined) continue; // a function or aggregation call
    if (KEYWORDS.has(word)) continue;
    if (/^\d/.test(word) || /^[eE]\d*$/.test(word)) continue;
    series.push(word);
  }
  return { series: [...new Set(series)], matchers, grouping: [...new Set(grouping)], created: [...new Set(created)] };
}

/**
 * The exact label values a matcher asks for: `="x"` gives x, `=~"a|b"` gives a and b when the
 * regex is a plain alternation of words; anything else (patterns, negations) gives none.
 */
export function literalValues(m: { op: string; value: string }): string[] {
  if (m.op === '=') return [m.value];
  if (m.op === '=~' && /^[A-Za-z0-9_-]+(\|[A-Za-z0-9_-]+)*$/.test(m.value)) return m.value.split('|');
  return [];
}
