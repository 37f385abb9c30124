import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { scoreBid, type ScoreContext } from './score.js'
import { LOSS } from './loss-codes.js'
import { creativeIdOfCrid } from '../creatives/register.js'
import { ImpIds } from '../inventory/adslots/imp-ids.js'
import { openStore } from '../store/store.js'
import type { OrtbBid } from '../generated/types.js'
import type { CreativeRecord } from '../creatives/records.js'
import type { ScreenRecord } from '../inventory/records.js'

// Bid scoring at intake (scoreBid): what a buyer is told about each bid, in the order it would want to be told, with
// the OpenRTB loss code. A real LMDB store holds the screen and the creative; imp ids are issued as GET /adslots
// issues them. No service, no HTTP.

const NOW = Date.parse('2026-11-24T15:00:00Z')
const store = openStore(mkdtempSync(join(tmpdir(), 'oohbid-score-')))
t.teardown(() => store.close())
const screen = { screen_id: 'scr_1', timezone: 'America/Chicago', floor_price_cpm: 2, blocked_categories: ['IAB9'], blocked_advertisers: ['rival.example'], max_age_rating: 'PG-13' } as unknown as ScreenRecord
store.write(() => {
  store.screens.putSync('scr_1', screen)
  store.creatives.putSync('cr_ok', { creative_id: 'cr_ok', seat_id: 'alpha', status: 'approved', moderation: { age_rating: 'G', iab_categories: [] } } as unknown as CreativeRecord)
  store.creatives.putSync('cr_other', { creative_id: 'cr_other', seat_id: 'bravo', status: 'approved', moderation: { age_rating: 'G', iab_categories: [] } } as unknown as CreativeRecord)
})
const impIds = new ImpIds(store)
const imp = (over: { seatId?: string, floor?: number, expiresAt?: number } = {}) => impIds.issue({ screenId: 'scr_1', seatId: 'alpha', floor: 2, multiplier: 1.5, issuedAt: NOW - 1000, expiresAt: NOW + 60_000, ...over })
const context: ScoreContext = { store, impIds, seatId: 'alpha', deals: [], cur: 'USD', now: NOW, allowPrivateAssetUrls: false }
const bid = (over: Partial<OrtbBid> = {}): OrtbBid => ({ id: 'b1', impid: imp(), price: 5, crid: 'cr_ok', adm: '<img src="https://cdn.example/a.png">', ...over })

t.test('a bid that can play is accepted at its price, with the floor it cleared and its creative', async (t) => {
  const s = scoreBid(bid(), context)
  t.match(s.outcome, { status: 'accepted', price: 5, floor: 2, screen_id: 'scr_1', creative_id: 'cr_ok' })
  t.equal(s.loss, undefined)
  t.match(s.imp, { screenId: 'scr_1', multiplier: 1.5 }, 'the imp it named, as issued')
})

t.test('what makes a bid unreadable stops scoring at once, each with its loss code', async (t) => {
  const cases: Array<[string, OrtbBid, ScoreContext, string, number]> = [
    ['cur', bid(), { ...context, cur: 'EUR' }, 'currency_not_supported', LOSS.invalidResponse],
    ['forged imp', bid({ impid: `${imp().slice(0, -2)}xx` }), context, 'unknown_imp', LOSS.invalidResponse],
    ['another seat\'s imp', bid({ impid: imp({ seatId: 'bravo' }) }), context, 'unknown_imp', LOSS.invalidResponse],
    ['expired imp', bid({ impid: imp({ expiresAt: NOW }) }), context, 'imp_expired', LOSS.expired],
    ['no adm, no nurl', bid({ adm: '' }), context, 'missing_adm_and_nurl', LOSS.missingMarkup],
    ['nurl not http', bid({ nurl: 'ftp://dsp.example/win?p=${AUCTION_PRICE}' }), context, 'invalid_notice_url', LOSS.invalidResponse],
    ['unknown deal', bid({ dealid: 'nope' }), context, 'invalid_deal', LOSS.invalidDeal]
  ]
  for (const [name, b, c, reason, loss] of cases) {
    const s = scoreBid(b, c)
    t.same([s.outcome.status, s.outcome.reason, s.loss], ['rejected', reason, loss], name)
  }
  t.equal(scoreBid(bid({ nurl: 'https://dsp.example/win?p=${AUCTION_PRICE}' }), context).outcome.status, 'accepted', 'a notice URL with macros is checked with them filled in')
})

t.test('every reason a bid cannot play is listed, the floor first; the first one is the answer', async (t) => {
  const s = scoreBid(bid({ price: 1.5, adomain: ['shop.rival.example'], cat: ['IAB9-7'] }), context)
  t.same([s.outcome.reason, s.loss], ['below_floor', LOSS.belowAuctionFloor])
  t.same(s.outcome.reasons?.map((r) => [r.reason, r.loss]), [['below_floor', 100], ['creative_blocked', 205], ['creative_blocked', 209]])
  store.write(() => store.screens.putSync('scr_1', { ...screen, floor_price_cpm: 6 }))
  t.teardown(() => store.write(() => store.screens.putSync('scr_1', screen)))
  const raised = scoreBid(bid(), context)
  t.same([raised.outcome.reason, raised.outcome.floor], ['below_floor', 6], 'a floor raised since the imp was issued is the floor in force')
})

t.test('a crid the seat has not registered: registered from the markup when it carries an asset', async (t) => {
  const s = scoreBid(bid({ crid: 'spring-sale', adomain: ['brand.example'], cat: ['IAB1'] }), context)
  t.same([s.outcome.reason, s.loss, s.creativeId], ['creative_blocked', LOSS.creativePending, creativeIdOfCrid('alpha', 'spring-sale')])
  t.match(s.register, { crid: 'spring-sale', source_url: 'https://cdn.example/a.png', content_type: 'image/png', advertiser_domain: 'brand.example', declared_categories: ['IAB1'] })
  const bare = scoreBid(bid({ crid: 'spring-sale', adm: '<b>text only</b>' }), context)
  t.same([bare.loss, bare.register], [LOSS.creativeDisapproved, undefined], 'no asset in the markup: nothing to register')
  const foreign = scoreBid(bid({ crid: 'cr_other', adm: '<b>x</b>' }), context)
  t.equal(foreign.loss, LOSS.creativeDisapproved, 'another seat\'s creative id is not this seat\'s')
  const privateAsset = scoreBid(bid({ crid: 'lan', adm: '<img src="http://10.0.0.5/a.png">' }), context)
  t.same([privateAsset.loss, privateAsset.register], [LOSS.creativeDisapproved, undefined], 'an asset on a private address is not fetched')
})
