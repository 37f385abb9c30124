import t from 'tap'
import { LOSS } from './loss-codes.js'
import { blockedCategory, blockedDomain, creativeRefusal, declaredRefusals, floorFor, floorRefusal } from './rules.js'
import type { ScreenRecord } from '../inventory/records.js'
import type { DealRecord } from '../campaigns/records.js'
import type { CreativeRecord } from '../creatives/records.js'

// The bidding rules that bid intake, the waterfall and the exchange bidder share (src/bidding/rules.ts), pinned one
// by one with the loss code each answers. No service is started.

const creative = {
  creative_id: 'cr_1', seat_id: 's', name: 'Beer', content_type: 'image/png', mode: 'url', status: 'approved', created_at: '', updated_at: '', moderated_at: '',
  advertiser_domain: 'ads.heineken.com',
  moderation: { age_rating: 'PG-13', iab_categories: [{ id: 'IAB8-5', name: 'Cocktails/Beer', confidence: 0.9 }] }
} as unknown as CreativeRecord
const screen = { screen_id: 'scr_1', timezone: 'America/Chicago', floor_price_cpm: 5, blocked_categories: [], blocked_advertisers: [], max_age_rating: 'PG-13' } as unknown as ScreenRecord

t.test('category and domain blocks: equal, or under a blocked parent', async (t) => {
  t.equal(blockedCategory(['IAB8-5'], ['IAB8']), 'IAB8-5', 'a tier-1 block covers its subcategories')
  t.equal(blockedCategory(['IAB8-5'], ['IAB8-5']), 'IAB8-5')
  t.equal(blockedCategory(['IAB8-5'], ['IAB8-1']), undefined)
  t.equal(blockedCategory(['IAB80'], ['IAB8']), undefined, 'IAB80 is not a subcategory of IAB8')
  t.equal(blockedDomain(['Ads.Heineken.com'], ['heineken.com']), 'ads.heineken.com', 'parent domains block subdomains, case aside')
  t.equal(blockedDomain(['notheineken.com'], ['heineken.com']), undefined, 'a suffix that is not a parent domain does not')
  t.equal(blockedDomain([], ['heineken.com']), undefined)
})

t.test('a creative on a screen: status, categories, advertiser, age rating, each with its loss code', async (t) => {
  t.equal(creativeRefusal(creative, screen), undefined)
  t.same(creativeRefusal({ ...creative, status: 'pending_moderation' }, screen), { loss: LOSS.creativePending, detail: 'creative cr_1 is pending_moderation' })
  t.equal(creativeRefusal({ ...creative, status: 'needs_review' }, screen)?.loss, 201)
  t.equal(creativeRefusal({ ...creative, status: 'awaiting_upload' }, screen)?.loss, 201)
  t.equal(creativeRefusal({ ...creative, status: 'rejected' }, screen)?.loss, 202)
  t.same(creativeRefusal(creative, { ...screen, blocked_categories: ['IAB8'] }), { loss: 209, detail: 'category IAB8-5 is blocked on this screen' })
  t.same(creativeRefusal(creative, { ...screen, blocked_advertisers: ['heineken.com'] }), { loss: 205, detail: 'advertiser ads.heineken.com is blocked on this screen' })
  t.same(creativeRefusal(creative, { ...screen, max_age_rating: 'PG' }), { loss: 200, detail: 'age rating PG-13 is above the screen\'s PG' })
  t.equal(creativeRefusal({ ...creative, declared_categories: ['IAB9-7'] }, { ...screen, blocked_categories: ['IAB9'] })?.loss, 209, 'declared categories count too')
})

t.test('what a bid declares: adomain (205) and cat (209), every block that applies', async (t) => {
  t.same(declaredRefusals({ adomain: ['brand.example'], cat: ['IAB1'] }, screen), [])
  t.same(declaredRefusals({ adomain: ['shop.rival.example'], cat: ['IAB9-7'] }, { ...screen, blocked_advertisers: ['rival.example'], blocked_categories: ['IAB9'] }).map((r) => r.loss), [205, 209])
  t.same(declaredRefusals({}, { ...screen, blocked_advertisers: ['rival.example'] }), [])
})

t.test('floors: the deal price, else the higher of the issued floor and the floor now', async (t) => {
  const deal = { floor_cpm: 6, fixed_cpm: 8 } as DealRecord
  t.equal(floorFor(deal, 3, screen), 8, 'a fixed price is the price')
  t.equal(floorFor({ ...deal, fixed_cpm: undefined } as unknown as DealRecord, 3, screen), 6, 'else the deal floor')
  t.equal(floorFor(undefined, 3, screen), 5, 'a floor raised since the imp was issued is the floor in force')
  t.equal(floorFor(undefined, 7, screen), 7)
  t.same(floorRefusal(4.99, 5, false), { loss: 100, detail: 'price 4.99 is below the floor 5 USD CPM.' })
  t.equal(floorRefusal(7.99, 8, true)?.loss, 101)
  t.equal(floorRefusal(5, 5, false), undefined, 'the floor itself clears')
})
