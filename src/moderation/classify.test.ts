import t from 'tap'
import { ageRating, classifyText, decide, policyFeatures, RULES, type ImageClasses } from './classify.js'

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

t.test('policy features agree with the decision they explain', async (t) => {
  const status = (flags: string[], classes: ImageClasses | undefined, seconds?: number) => Object.fromEntries(policyFeatures(new Set(flags) as Set<never>, classes, seconds).map((f) => [f.feature_id, f.status]))
  t.match(status([], SAFE), { adult_content: 'passed', profanity: 'passed', violence: 'passed', political: 'passed', alcohol: 'passed', video_length: 'passed' })
  t.match(status(['violence', 'alcohol'], undefined), { violence: 'failed', alcohol: 'warning' }, 'rejected for violence; alcohol allowed and flagged')
  t.match(status(['political', 'firearms'], SAFE), { political: 'warning', firearms: 'warning' }, 'what a reviewer decides is a warning')
  t.match(status([], { ...SAFE, Sexy: 0.3 }), { adult_content: 'warning' }, 'borderline imagery')
  t.match(status([], { ...SAFE, Porn: RULES.adultReject }), { adult_content: 'failed' })
  t.match(status([], SAFE, RULES.maxVideoSeconds + 1), { video_length: 'failed' })
  for (const [flags, classes] of [[['profanity'], SAFE], [['gambling'], SAFE], [[], { ...SAFE, Sexy: 0.85 }]] as Array<[string[], ImageClasses]>) {
    const failed = Object.values(status(flags, classes)).includes('failed')
    t.equal(failed, decide(new Set(flags) as Set<never>, classes, 0.9, undefined).decision === 'rejected', `${flags.join(',') || 'imagery'}: a failed feature exactly when moderation rejects`)
  }
})
