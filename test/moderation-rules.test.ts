import t from 'tap'
import { ageRating, classifyText, decide, RULES, type ImageClasses } from '../src/moderation/classify.js'
import { blockReason } from '../src/moderation/eligibility.js'
import type { CreativeRecord, ScreenRecord } from '../src/store/records.js'

const SAFE: ImageClasses = { Neutral: 0.9, Drawing: 0.08, Sexy: 0.01, Porn: 0.005, Hentai: 0.005 }

t.test('text classification: flags, brands, categories, profanity', async (t) => {
  const beer = classifyText('COLD BEER\nHeineken happy hour')
  t.same([...beer.flags], ['alcohol'])
  t.same(beer.brands, ['heineken'])
  t.equal(beer.categories.get('IAB8-5'), 0.9)
  t.same([...classifyText('Poker night at the CASINO').flags], ['gambling'])
  t.same([...classifyText('Marlboro: smoke what you like').flags].sort(), ['tobacco'])
  t.ok(classifyText('what the fuck').flags.has('profanity'), 'obscenity catches profanity')
  t.ok(classifyText('GUN SHOW this weekend').flags.has('firearms'))
  t.same([...classifyText('Fresh bread every morning').flags], [], 'plain text flags nothing')
  t.notOk(classifyText('A ginger latte').flags.has('alcohol'), 'whole words only: ginger is not gin')
})

t.test('decision rules', async (t) => {
  t.same(decide(new Set(), SAFE, 0.95, undefined), { decision: 'approved', reasons: ['no policy concerns found'] })
  t.same(decide(new Set(['alcohol']), SAFE, 0.95, undefined), { decision: 'approved', reasons: ['flagged alcohol'] }, 'alcohol is approved with its flag, screens decide')
  t.match(decide(new Set(), { ...SAFE, Porn: RULES.adultReject, Neutral: 0.3 }, 0.9, undefined), { decision: 'rejected', reasons: ['adult content'] })
  t.match(decide(new Set(), { ...SAFE, Sexy: 0.85 }, 0.9, undefined), { decision: 'rejected' })
  t.match(decide(new Set(), { ...SAFE, Sexy: 0.3 }, 0.9, undefined), { decision: 'needs_review', reasons: ['borderline imagery'] })
  t.match(decide(new Set(['profanity']), SAFE, 0.9, undefined), { decision: 'rejected', reasons: ['profanity'] })
  t.match(decide(new Set(['violence']), SAFE, 0.9, undefined), { decision: 'rejected', reasons: ['violence'] })
  t.match(decide(new Set(['political']), SAFE, 0.9, undefined), { decision: 'needs_review', reasons: ['political content'] })
  t.match(decide(new Set(['firearms']), SAFE, 0.9, undefined), { decision: 'needs_review', reasons: ['firearms'] })
  t.match(decide(new Set(), SAFE, 0.4, undefined), { decision: 'needs_review', reasons: [/low confidence/] })
  t.match(decide(new Set(), SAFE, 0.9, 121), { decision: 'rejected', reasons: [/longer than 120 s/] })
  t.equal(ageRating(new Set(), SAFE), 'G')
  t.equal(ageRating(new Set(['alcohol']), SAFE), 'PG-13')
  t.equal(ageRating(new Set(['tobacco']), SAFE), 'R')
  t.equal(ageRating(new Set(['adult_content']), SAFE), 'NC-17')
  t.equal(ageRating(new Set(['political']), SAFE), 'PG')
})

t.test('eligibility on a screen: approval, blocked categories and advertisers, age rating', async (t) => {
  const creative = {
    creative_id: 'cr_1', seat_id: 's', name: 'Beer', content_type: 'image/png', mode: 'url', status: 'approved', created_at: '', updated_at: '', moderated_at: '',
    advertiser_domain: 'ads.heineken.com',
    moderation: { age_rating: 'PG-13', iab_categories: [{ id: 'IAB8-5', name: 'Cocktails/Beer', confidence: 0.9 }] }
  } as unknown as CreativeRecord
  const screen = { blocked_categories: [], blocked_advertisers: [], max_age_rating: 'PG-13' } as unknown as ScreenRecord
  t.equal(blockReason(creative, screen), undefined)
  t.match(blockReason({ ...creative, status: 'needs_review' }, screen), /needs_review/)
  t.match(blockReason(creative, { ...screen, blocked_categories: ['IAB8-5'] }), /IAB8-5 is blocked/)
  t.match(blockReason(creative, { ...screen, blocked_categories: ['IAB8'] }), /IAB8-5 is blocked/, 'a tier-1 block covers its subcategories')
  t.equal(blockReason(creative, { ...screen, blocked_categories: ['IAB8-1'] }), undefined)
  t.match(blockReason(creative, { ...screen, blocked_advertisers: ['heineken.com'] }), /advertiser ads\.heineken\.com/, 'parent domains block subdomains')
  t.match(blockReason(creative, { ...screen, max_age_rating: 'PG' }), /age rating PG-13 is above the screen's PG/)
  t.match(blockReason({ ...creative, declared_categories: ['IAB9-7'] }, { ...screen, blocked_categories: ['IAB9-7'] }), /IAB9-7/, 'declared categories count too')
})
