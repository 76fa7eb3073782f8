/**
 * Prints what bench/lib/role-probe.cjs wrote into a folder: per role, its Redis commands and
 * Postgres statements by count, and for CPU profiles the functions by self time and by inclusive
 * time (node_modules and dist/ paths shortened), over [--from, --to] seconds of the profile.
 *
 *   node -r ./bench/lib/register.cjs bench/probe-summary.ts <dir> [--from 13] [--to 32] [--top 30]
 *
 * Without --from the profiles also print their busy samples per second, to find the window the
 * measurement ran in (a stream's T0 comes after its load and warm-up).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }
interface Profile { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] }

const args = process.argv.slice(2);
const flag = (name: string) => { const i = args.indexOf(`--${name}`); return i >= 0 ? Number(args[i + 1]) : undefined; };
const dir = args[0];
const [from, to, top] = [flag('from'), flag('to') ?? Infinity, flag('top') ?? 30];
if (!dir) throw new Error('usage: probe-summary.ts <dir> [--from s] [--to s] [--top n]');

const short = (f: ProfileNode['callFrame']) => `${f.functionName || '(anonymous)'} ${f.url.replace(/.*node_modules\//, '').replace(/.*\/dist\//, '')}:${f.lineNumber}`;
const table = (rows: [string, number][], total: number) => rows.sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(6)} %  ${k}`).join('\n');

for (const file of readdirSync(dir).sort()) {
  if (file.endsWith('.calls.json')) {
    const { role, ms, counts } = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { role: string; ms: number; counts: Record<string, number> };
    const rows = Object.entries(counts).sort((a, b) => b[1] - a[1]).slice(0, top);
    console.log(`\n## ${file}: ${role}, ${(ms / 1000).toFixed(0)} s\n${rows.map(([k, v]) => `${String(v).padStart(9)}  ${k}`).join('\n')}`);
  } else if (file.endsWith('.cpuprofile')) {
    const p = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    const self = new Map<string, number>();
    const inclusive = new Map<string, number>();
    const perSecond: number[] = [];
    let [t, total] = [p.startTime, 0];
    p.samples.forEach((id, i) => {
      t += p.timeDeltas[i];
      const s = (t - p.startTime) / 1e6;
      const node = byId.get(id)!;
      if (node.callFrame.functionName === '(idle)') return;
      perSecond[Math.floor(s)] = (perSecond[Math.floor(s)] ?? 0) + 1;
      if (s < (from ?? 0) || s > to) return;
      total++;
      self.set(short(node.callFrame), (self.get(short(node.callFrame)) ?? 0) + 1);
      const seen = new Set<string>();
      for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) seen.add(short(byId.get(at)!.callFrame));
      for (const k of seen) inclusive.set(k, (inclusive.get(k) ?? 0) + 1);
    });
    const interval = (p.endTime - p.startTime) / p.samples.length;
    console.log(`\n## ${file}: ${total} busy samples of ~${interval.toFixed(0)} µs in the window`);
    if (from === undefined) console.log(`busy samples per second: ${perSecond.map((n, s) => `${s}:${n ?? 0}`).join(' ')}`);
    console.log(`self\n${table([...self], total)}\ninclusive\n${table([...inclusive], total)}`);
  }
}
