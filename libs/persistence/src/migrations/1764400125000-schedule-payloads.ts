import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A large schedule payload is stored once per version (`schedule_payloads`), and its occurrences
 * point at it (`jobs.payload_ref`, their own `payload` NULL) instead of each carrying a copy:
 * a per-minute schedule with a 64 KiB payload wrote 2.7 GB a month of copies. `schedules.payload_ref`
 * is the current version's row, made by the recurring sweep when it first needs it and cleared
 * when the payload changes; retention removes a version no schedule and no job points at.
 */
export class SchedulePayloads1764400125000 implements MigrationInterface {
  name = 'SchedulePayloads1764400125000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE schedule_payloads (
        id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tenant_id integer NOT NULL,
        schedule_id bigint NOT NULL,
        payload json NOT NULL
      )`);
    await q.query(`CREATE INDEX schedule_payloads_tenant ON schedule_payloads (tenant_id, id)`);
    await q.query(`ALTER TABLE schedules ADD COLUMN payload_ref bigint`);
    await q.query(`ALTER TABLE jobs ADD COLUMN payload_ref bigint`);
    await q.query(`CREATE INDEX jobs_payload_ref ON jobs (payload_ref) WHERE payload_ref IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`UPDATE jobs j SET payload = p.payload FROM schedule_payloads p WHERE j.payload_ref = p.id`);
    await q.query(`DROP INDEX jobs_payload_ref`);
    await q.query(`ALTER TABLE jobs DROP COLUMN payload_ref`);
    await q.query(`ALTER TABLE schedules DROP COLUMN payload_ref`);
    await q.query(`DROP TABLE schedule_payloads`);
  }
}
