import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { activeDealsFor } from './deals.js'
import { openStore } from '../store/store.js'

t.test('a seat\'s active deals follow another thread\'s commit, however old the snapshot that first asked', async (t) => {
  // Two stores over one environment, sharing their cache generations as two hot threads do.
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-deals-'))
  const a = openStore(dir)
  const b = openStore(dir, undefined, a.generations)
  t.teardown(async () => { await b.close(); await a.close(); rmSync(dir, { recursive: true, force: true }) })
  const deal = (status: string) => ({ deal_id: 'd_1', status, invited_seats: ['Seat-1'] }) as never
  b.refresh()
  t.same(activeDealsFor(b, 'seat-1'), [], 'no deals yet')
  // b's request has begun: its first read fixes its snapshot, then a commits a deal and moves the generation.
  b.meta.get('anything')
  a.write(() => a.deals.putSync('d_1', deal('active')))
  t.same(activeDealsFor(b, 'seat-1'), [], 'b\'s request derives from its own snapshot')
  b.refresh()
  t.same(activeDealsFor(b, 'seat-1').map((d) => d.deal_id), ['d_1'], 'b\'s next request sees the deal: nothing derived from the old snapshot was kept')
  let inTheGap: string[] = []
  a.write(() => {
    // Registered before a's write, so it runs first after a's commit: a has committed, its generation has not moved.
    a.afterCommit(() => { inTheGap = b.write(() => activeDealsFor(b, 'seat-1').map((d) => d.deal_id)) })
    a.deals.putSync('d_1', deal('paused'))
  })
  t.same(inTheGap, [], 'a transaction taking the lock before the generation moved derives from the commit')
  b.refresh()
  t.same(activeDealsFor(b, 'seat-1'), [], 'and so does b\'s next request')
})
