import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU seconds used so far by a local process (utime + stime from /proc, Linux only). Used to
 * report the Postgres backend's CPU per job, which stays meaningful when other work shares
 * the machine and wall-clock rates do not.
 */
export function processCpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[11], fields[12] are utime and stime (fields 14 and 15 of proc(5)) in clock ticks.
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

export function selfCpuSeconds(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
}

/**
 * CPU seconds used so far by every process of the local Postgres server (postmaster, backends,
 * WAL writer, checkpointer…). Backends that exit between two readings take their CPU with them,
 * so measure across a span in which the clients keep their connections open.
 */
export function postgresCpuSeconds(): number {
  let total = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue;
    } catch {
      continue;
    }
    total += processCpuSeconds(Number(entry)) ?? 0;
  }
  return total;
}
