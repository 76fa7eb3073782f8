import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { sql } from '../sql';
import { BEAT_WORKER_SQL } from '../statements/beat-worker.sql';
import { LIST_WORKERS_SQL } from '../statements/list-workers.sql';
import { REGISTER_WORKER_SQL } from '../statements/register-worker.sql';
import { REMOVE_WORKER_SQL } from '../statements/remove-worker.sql';

/** One worker process as its row says, read with the database's clock. */
export interface WorkerRow {
  id: number;
  name: string;
  pools: string[];
  concurrency: number;
  /** Handlers running, per pool in the order of `pools`. */
  running: number[];
  /** Draining at shutdown: takes nothing new, its capacity no longer counts. */
  leaving: boolean;
  beatAtMs: number;
}

/** The workers as the database's clock saw them at `dbNowMs`. */
export interface WorkersView {
  dbNowMs: number;
  workers: WorkerRow[];
}

/**
 * The workers table: each worker process's heartbeat, by the database's clock, and what it can
 * run. A worker registers at boot, beats every second and removes itself at shutdown; the
 * promoter's rescue removes one whose beat stopped, after putting its work back.
 */
@Injectable()
export class WorkersRepository {
  constructor(private readonly dataSource: DataSource) {}

  /** The new row's id, and the database's clock as it wrote it. */
  async register(name: string, pools: readonly string[], concurrency: number): Promise<{ id: number; dbNowMs: number }> {
    const { rows } = await sql<{ id: number; db_now: Date }>(this.dataSource, REGISTER_WORKER_SQL, [name, pools, concurrency]);
    return { id: rows[0].id, dbNowMs: rows[0].db_now.getTime() };
  }

  /** The database's clock as it wrote the beat; null when the row is gone: the rescue took this worker for dead, and it must register again. */
  async beat(id: number, running: readonly number[], leaving: boolean): Promise<number | null> {
    const { rows } = await sql<{ db_now: Date }>(this.dataSource, BEAT_WORKER_SQL, [id, running, leaving]);
    return rows.length > 0 ? rows[0].db_now.getTime() : null;
  }

  async list(): Promise<WorkersView> {
    const { rows } = await sql<{
      id: number | null; name: string; pools: string[]; concurrency: number; running: number[]; leaving: boolean; beat_at: Date; db_now: Date;
    }>(this.dataSource, LIST_WORKERS_SQL);
    const workers = rows.filter((r) => r.id !== null).map((r) => ({
      id: r.id as number, name: r.name, pools: r.pools, concurrency: r.concurrency, running: r.running, leaving: r.leaving,
      beatAtMs: r.beat_at.getTime(),
    }));
    return { dbNowMs: rows[0].db_now.getTime(), workers };
  }

  /** Removes a worker's row; with `beatAtMs`, only if it has not beaten since (the rescue's guard). */
  async remove(id: number, beatAtMs?: number): Promise<boolean> {
    const { rows } = await sql(this.dataSource, REMOVE_WORKER_SQL, [id, beatAtMs === undefined ? null : new Date(beatAtMs)]);
    return rows.length > 0;
  }
}
