import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { openStore } from '../store/store.js'
import { indexWaitingBuys, mediaBuysDue } from './media-buy-activation.js'
import type { MediaBuyRecord } from './records.js'

// A store kept before media_buys_waiting existed: its waiting buys are indexed once at start, so the activation job,
// which reads only the index, still finds them; a store already indexed is left alone.

const NOW = Date.parse('2026-11-30T15:00:00Z')

const buy = (id: string, waiting: boolean, end = '2026-12-07T15:00:00.000Z'): MediaBuyRecord => ({
  media_buy_id: id, seat_id: 'seat', buyer_ref: id, start_time: '2026-11-30T15:00:00.000Z', end_time: end, start_date: '2026-11-30', end_date: '2026-12-07', paused: false,
  packages: [{ package_id: 'pkg-0', product_id: 'p', pricing_option_id: 'cpm_fixed', sale: 'preferred', budget: 10, rate: 10, pacing: 'even', screen_ids: [], spots_per_day: 1, impressions: 1, creative_ids: ['c'], paused: false, ...(waiting ? {} : { campaign_id: 'cmp', assignment_id: 'as' }) }],
  created_at: '2026-11-30T15:00:00.000Z', updated_at: '2026-11-30T15:00:00.000Z'
})

t.test('waiting buys of an older store are indexed once, and only they', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-waiting-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const store = openStore(dir)
  t.teardown(() => store.close())
  store.write(() => {
    for (const b of [buy('mb_waiting', true), buy('mb_playing', false), buy('mb_ended', true, '2026-11-30T14:00:00.000Z')]) store.mediaBuys.putSync(b.media_buy_id, b)
  })
  t.equal(indexWaitingBuys(store), 2, 'the two buys with a package waiting for a creative')
  t.same([...store.mediaBuysWaiting.getKeys()].sort(), ['mb_ended', 'mb_waiting'])
  t.equal(mediaBuysDue(store, NOW), false, 'no creative of theirs is approved: nothing is due')
  t.equal(indexWaitingBuys(store), 0, 'an indexed store is left alone')
})
