import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openBackend } from './backends.js'
import { RowBuilder, tsv, tsvArray } from './rows.js'
import { ddl, RAW } from './schema.js'
import type { ScreenRecord } from '../inventory/records.js'

t.test('tsv escapes what would end a field or a line, and nothing else', async (t) => {
  t.equal(tsv('plain text, with "quotes"'), 'plain text, with "quotes"')
  t.equal(tsv('a\tb\nc\rd\\e'), 'a\\tb\\nc\\rd\\\\e')
  t.equal(tsvArray(undefined), '[]')
  t.equal(tsvArray([]), '[]')
  t.equal(tsvArray(['IAB1', "it's", 'a\tb']), "['IAB1','it\\'s','a\\tb']")
})

t.test('rows with awkward text reach ClickHouse exactly as the events carried them', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-rows-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const backend = await openBackend({ dataDir: dir })
  t.teardown(() => backend.close())
  for (const statement of ddl({ database: 'rows_test' })) await backend.exec(statement)
  const screen = { location: { venue_type: 'transit.airport', country: 'US', state: 'NY', city: "Saint\tJohn's\nBay" }, timezone: 'America/New_York' } as unknown as ScreenRecord
  const rows = new RowBuilder((id) => id === 'scr_1' ? screen : undefined)
  const at = Date.UTC(2026, 10, 25, 15, 30)
  const seat = 'seat\\with\ttab'
  rows.add(7, { stage: 'bid_received', at, seat_id: seat, sandbox: true, screens: [], bids: [{ screen_id: 'scr_1', price: 2.75, status: 'rejected', reason: 'below_floor', deal_id: "deal'1", cat: ['IAB1', "o'brien\\x"], adomain: ['a.example'], latency_ms: 12.5 }, { screen_id: 'unknown', price: 1, status: 'accepted' }] })
  rows.add(8, { stage: 'proof', at, screens: ['scr_1'], proof_id: 'pr\n1', tier: 'impression_callback', impression_id: 'imp 1', ad_id: 'ad', device_id: 'dev', duration_ms: 15000, completed: true, givt_passed: true, seat_id: seat })
  rows.from('node-2')
  rows.add(7, { stage: 'request', at, seat_id: seat, screens: ['scr_1'] })
  for (const [table, built] of rows.take().tables) await backend.insert(`rows_test.${table}`, RAW[table]!, built.text())
  const bids = await backend.query('SELECT * FROM rows_test.bids ORDER BY screen_id')
  t.same(bids, [
    { event_id: 7, ts: '2026-11-25 15:30:00', seat_id: seat, sandbox: 1, screen_id: 'scr_1', venue_type: 'transit.airport', country: 'US', state: 'NY', city: "Saint\tJohn's\nBay", local_hour: 10, daypart: 'morning', price: 2.75, status: 'rejected', reason: 'below_floor', deal_id: "deal'1", cats: ['IAB1', "o'brien\\x"], adomain: ['a.example'], latency_ms: 12.5, node: '' },
    { event_id: 7, ts: '2026-11-25 15:30:00', seat_id: seat, sandbox: 1, screen_id: 'unknown', venue_type: '', country: '', state: '', city: '', local_hour: 0, daypart: '', price: 1, status: 'accepted', reason: '', deal_id: '', cats: [], adomain: [], latency_ms: 0, node: '' }
  ])
  t.same(await backend.query('SELECT event_id, node FROM rows_test.bid_requests'), [{ event_id: 7, node: 'node-2' }], 'an event of another node carries its node: the same id from two nodes is two events')
  t.same(await backend.query('SELECT proof_id, screen_id, tier, givt FROM rows_test.proofs'), [{ proof_id: 'pr\n1', screen_id: 'scr_1', tier: 'impression_callback', givt: 1 }])
  t.same(await backend.query('SELECT seat_id, city, local_hour, duration_ms, completed FROM rows_test.impressions'), [{ seat_id: seat, city: "Saint\tJohn's\nBay", local_hour: 10, duration_ms: 15000, completed: 1 }])
})

t.test('a batch keeps only the lines of the events it is asked to keep', async (t) => {
  const rows = new RowBuilder(() => undefined)
  for (let id = 1; id <= 3; id++) rows.add(id, { stage: 'request', at: 0, seat_id: 's', screens: [`scr_${id}`] })
  rows.from('node-2')
  rows.add(2, { stage: 'request', at: 0, seat_id: 's', screens: ['scr_4'] })
  const batch = rows.take()
  t.same(batch.nodes, ['', 'node-2'])
  const built = batch.tables.get('bid_requests')!
  t.same(built.ids, [1, 2, 3, 2])
  t.same(built.origins, [0, 0, 0, 1])
  t.equal(built.text((id, origin) => id !== 2 || origin === 1).toString(), '1\t0\ts\t0\tscr_1\t\t\t\t\t0\t\t\n3\t0\ts\t0\tscr_3\t\t\t\t\t0\t\t\n2\t0\ts\t0\tscr_4\t\t\t\t\t0\t\tnode-2\n')
  t.equal(built.text().toString().split('\n').length, 5)
  rows.add(5, { stage: 'request', at: 0, seat_id: 's', screens: ['scr_5'] })
  t.same(rows.take().nodes, ['node-2'], 'the next batch goes on with the node last named')
})
