import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openBackend } from './backends.js'
import { columnList, ddl, RAW, upgrades } from './schema.js'

t.test('raw tables made before events carried their node gain the column once, and keep their rows', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-schema-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const backend = await openBackend({ dataDir: dir })
  t.teardown(() => backend.close())
  const target = { database: 'upgrade_test' }
  await backend.exec('CREATE DATABASE upgrade_test')
  // The raw tables as the version before made them: the same columns without the node.
  for (const [name, columns] of Object.entries(RAW)) {
    await backend.exec(`CREATE TABLE upgrade_test.${name} (${columnList(columns.filter(([c]) => c !== 'node'))}) ENGINE = MergeTree() PARTITION BY toYYYYMM(ts) ORDER BY (ts, event_id)`)
  }
  await backend.exec("INSERT INTO upgrade_test.plays (event_id, ts, stage, seat_id) VALUES (1, toDateTime('2026-11-25 10:00:00', 'UTC'), 'play_completed', 'old')")
  for (const statement of ddl(target)) await backend.exec(statement)
  const columns = async (table: string) => new Set((await backend.query('SELECT name FROM system.columns WHERE database = {database:String} AND table = {table:String}', { database: 'upgrade_test', table })).map((r) => String(r.name)))
  const alters = await upgrades(target, columns)
  t.equal(alters.length, Object.keys(RAW).length, 'one ALTER a raw table')
  for (const statement of alters) await backend.exec(statement)
  t.same(await upgrades(target, columns), [], 'and none the next time')
  t.same(await backend.query('SELECT seat_id, node FROM upgrade_test.plays'), [{ seat_id: 'old', node: '' }], 'an earlier row reads as a single node\'s')
})
