import t from 'tap'
import { recordDelivery } from '../src/campaigns/lifecycle.js'
import { approvedCreative, unapprovedCreative } from './helpers/creatives.js'
import { deviceBody, registerDevices, registerPartner } from './helpers/fleet.js'
import { startTestService, type TestService } from './helpers/service.js'

const DAY = 86_400_000
const date = (ms: number) => new Date(ms).toISOString().slice(0, 10)

async function setup (svc: TestService) {
  const p = await registerPartner(svc)
  const ids = await registerDevices(svc, p, [
    deviceBody('gym-a', { floor_price_cpm: 5 }),
    deviceBody('gym-b', { floor_price_cpm: 12 }),
    deviceBody('bar-a', { location: { venue_type: 'bar' }, floor_price_cpm: 6 }),
    deviceBody('tor', { location: { lat: 43.6532, lng: -79.3832, city: 'Toronto', state: 'ON', country: 'CA', venue_type: 'gym' }, floor_price_cpm: 4 })
  ])
  const { key } = await svc.onboard('camp_buyer')
  const creative = await approvedCreative(svc, key)
  return { ids, key, creative }
}

t.test('campaigns: creation rules, matching screens, states over the flight, events', async (t) => {
  const svc = await startTestService(t)
  const { ids, key, creative } = await setup(svc)
  const today = date(svc.clock.now())
  const inAWeek = date(svc.clock.now() + 7 * DAY)
  const base = { creative_id: creative, name: 'Gym push', budget_usd: 500, start_date: today, end_date: inAWeek }
  const before = svc.snapshot()
  const pending = await unapprovedCreative(svc, key)
  const snapshotAfterSetup = svc.snapshot()
  const cases: Array<[Record<string, unknown>, number, string, string]> = [
    [{ ...base, creative_id: undefined }, 400, 'missing_creative_id', 'creative_id'],
    [{ ...base, name: undefined }, 400, 'missing_name', 'name'],
    [{ ...base, creative_id: pending }, 422, 'validation_failed', 'creative_id'],
    [{ ...base, creative_id: 'cr_nope' }, 404, 'creative_not_found', 'creative_id'],
    [{ ...base, budget_usd: 0 }, 400, 'invalid_budget', 'budget_usd'],
    [{ ...base, budget_usd: 'lots' }, 400, 'invalid_budget', 'budget_usd'],
    [{ ...base, daily_budget_usd: 900 }, 400, 'invalid_budget', 'daily_budget_usd'],
    [{ ...base, start_date: inAWeek, end_date: today }, 400, 'invalid_date', 'end_date'],
    [{ ...base, start_date: '2020-01-01', end_date: '2020-01-31' }, 400, 'invalid_date', 'end_date'],
    [{ ...base, start_date: '31/12/2026' }, 400, 'invalid_date', 'start_date'],
    [{ ...base, targeting: { state: 'TX' } }, 400, 'invalid_parameter', 'targeting.state'],
    [{ ...base, targeting: { planet: 'Mars' } }, 400, 'invalid_parameter', 'targeting.planet']
  ]
  for (const [body, status, code, param] of cases) {
    const r = await svc.request('POST', '/openrtb/v2/campaigns', { key, body })
    t.equal(r.status, status, `${code} ${param}`)
    t.match(r.body, { error_code: code, param })
  }
  t.same(svc.snapshot(), snapshotAfterSetup, 'nothing written')
  t.ok(before)
  const r = await svc.request('POST', '/openrtb/v2/campaigns', { key, body: { ...base, targeting: { country: 'us', venue_type: 'gym' }, bid_cpm: 10, goal_impressions: 3 } })
  t.equal(r.status, 201)
  t.match(r.body.data, { campaign_id: /^cmp_/, status: 'active', matching_screens: 1, targeting: { country: 'US' }, spent_usd: 0, impressions: 0, pacing: 'even' })
  t.same(r.body.data.screens.map((s: { screen_id: string }) => s.screen_id), [ids['gym-a']], 'US gyms with a floor within bid_cpm')
  const id = r.body.data.campaign_id
  const later = await svc.request('POST', '/openrtb/v2/campaigns', { key, body: { ...base, start_date: date(svc.clock.now() + 2 * DAY), end_date: inAWeek, targeting: { venue_types: ['gym', 'bar'] } } })
  t.match(later.body.data, { status: 'scheduled', matching_screens: 4 })
  const events = () => svc.service.outbox.read('test', 500).filter((e) => e.type.startsWith('campaign.')).map((e) => [e.type, e.data.campaign_id])
  t.same(events(), [['campaign.allocated', id], ['campaign.allocated', later.body.data.campaign_id]])
  t.equal((await svc.request('POST', `/openrtb/v2/campaigns/${id}/resume`, { key })).status, 409, 'only a paused campaign resumes')
  t.equal((await svc.request('POST', `/openrtb/v2/campaigns/${id}/pause`, { key, body: { reason: 'creative refresh' } })).body.data.status, 'paused')
  t.equal((await svc.request('POST', `/openrtb/v2/campaigns/${id}/resume`, { key })).body.data.status, 'active')
  svc.service.store.write(() => {
    recordDelivery(svc.service.store, svc.service.outbox, id, 1, 10_000, svc.clock.now())
    recordDelivery(svc.service.store, svc.service.outbox, id, 2, 20_000, svc.clock.now())
  })
  t.match((await svc.request('GET', `/openrtb/v2/campaigns/${id}`, { key })).body.data, { status: 'completed', impressions: 3, spent_usd: 0.03, completed_reason: 'goal_impressions reached' })
  svc.clock.advance(2 * DAY)
  await svc.service.runJobs()
  t.equal((await svc.request('GET', `/openrtb/v2/campaigns/${later.body.data.campaign_id}`, { key })).body.data.status, 'active', 'scheduled becomes active on its start date')
  svc.clock.advance(6 * DAY)
  await svc.service.runJobs()
  t.match((await svc.request('GET', `/openrtb/v2/campaigns/${later.body.data.campaign_id}`, { key })).body.data, { status: 'completed', completed_reason: 'end_date passed' })
  t.same(events().slice(2), [['campaign.paused', id], ['campaign.resumed', id], ['campaign.started', id], ['campaign.completed', id], ['campaign.completed', later.body.data.campaign_id]])
  const list = await svc.request('GET', '/openrtb/v2/campaigns?status=completed', { key })
  t.equal(list.body.data.campaigns.length, 2)
  const other = await svc.onboard('camp_other')
  t.equal((await svc.request('GET', `/openrtb/v2/campaigns/${id}`, { key: other.key })).body.error_code, 'campaign_not_found', 'another seat\'s campaign')
})

t.test('a request with only the spec\'s fields succeeds, its defaults shown in the answer and named in warnings', async (t) => {
  // 18:00 UTC today: the Austin test screens are on the same calendar day as UTC.
  const svc = await startTestService(t, {}, { at: Math.floor(Date.now() / DAY) * DAY + 18 * 3_600_000 })
  const { ids, key, creative } = await setup(svc)
  const today = date(svc.clock.now())
  const end = date(svc.clock.now() + 29 * DAY)
  const campaign = await svc.request('POST', '/openrtb/v2/campaigns', { key, body: { creative_id: creative, name: 'Spec minimum', targeting: { country: 'US', venue_type: 'gym' } } })
  t.equal(campaign.status, 201, campaign.text)
  t.match(campaign.body.data, { status: 'active', budget_usd: 100, pacing: 'even', start_date: today, end_date: end, matching_screens: 2 })
  t.same(campaign.body.warnings, ['budget_usd not given: defaulted to 100.', 'pacing not given: defaulted to "even".', `start_date not given: defaulted to today, ${today}.`, `end_date not given: defaulted to ${end}, a 30-day flight.`])
  const assign = await svc.request('POST', '/openrtb/v2/campaigns/assign', { key, body: { creative_id: creative, screen_ids: [ids['gym-a']] } })
  t.equal(assign.status, 201, assign.text)
  t.match(assign.body.data, { spots_per_day: 24, start_date: today, end_date: end, screen_ids: [ids['gym-a']] })
  t.same(assign.body.warnings, ['spots_per_day not given: defaulted to 24.', `start_date not given: defaulted to today, ${today} (the screens' local date).`, `end_date not given: defaulted to ${end}, a 30-day flight.`])
  const avail = await svc.request('POST', '/openrtb/v2/screens/availability', { key, body: { screen_ids: [ids['gym-a']], start_date: end, end_date: end } })
  t.match(avail.body.data.screens[0], { booked: 24 }, 'the defaults are what was booked, to the last day')
  const deal = await svc.request('POST', '/openrtb/v2/deals/propose', { key, body: { deal_id: 'spec-min-1', floor_cpm: 7 } })
  t.equal(deal.status, 201, deal.text)
  t.match(deal.body.data, { deal_id: 'spec-min-1', type: 'PMP', status: 'pending', floor_cpm: 7, start_date: today, end_date: end })
  t.same(deal.body.warnings, ['type not given: defaulted to "PMP".', `start_date not given: defaulted to today, ${today}.`, `end_date not given: defaulted to ${end}, a 30-day flight.`])
  svc.clock.set(Math.floor(svc.clock.now() / DAY) * DAY + DAY + 2 * 3_600_000)
  const early = await svc.request('POST', '/openrtb/v2/campaigns/assign', { key, body: { creative_id: creative, screen_ids: [ids['gym-b']], spots_per_day: 1 } })
  t.match(early.body.data, { start_date: today }, 'at 02:00 UTC an Austin screen is still on yesterday: the placement starts on its date and plays at once')
  const utcToday = date(svc.clock.now())
  const meantNow = await svc.request('POST', '/openrtb/v2/campaigns/assign', { key, body: { creative_id: creative, screen_ids: [ids['gym-b']], spots_per_day: 1, start_date: utcToday, end_date: end } })
  t.equal(meantNow.status, 201)
  t.same(meantNow.body.warnings, [`start_date ${utcToday} has not begun on 1 of the screens' local calendars (America/Chicago is on ${today}): they play this placement from their local midnight. Leave start_date out to start at once.`], 'today\'s UTC date on a screen still on yesterday is accepted, and the wait is said')
  const full = await svc.request('POST', '/openrtb/v2/campaigns', { key, body: { creative_id: creative, name: 'All given', budget_usd: 50, pacing: 'asap', start_date: today, end_date: end } })
  t.equal(full.body.warnings, undefined, 'nothing defaulted, nothing to warn of')
  const stillChecked = await svc.request('POST', '/openrtb/v2/deals/propose', { key, body: { floor_cpm: 7, start_date: '2020-01-01' } })
  t.match(stillChecked, { status: 400, body: { error_code: 'invalid_date', param: 'end_date' } }, 'a default end after a past start is still a past flight: every other rule holds')
})

t.test('assignments take spots from availability and reach the player within the pickup window', async (t) => {
  const svc = await startTestService(t, { PICKUP_SECONDS: '45' })
  const { ids, key, creative } = await setup(svc)
  const today = date(svc.clock.now())
  const body = { creative_id: creative, screen_ids: [ids['gym-a'], ids['bar-a']], start_date: today, end_date: today, spots_per_day: 100 }
  const r = await svc.request('POST', '/openrtb/v2/campaigns/assign', { key, body })
  t.equal(r.status, 201)
  t.match(r.body.data, { assignment_id: /^as_/, creative_id: creative, spots_per_day: 100, status: 'active', source: 'assignment' })
  t.equal(Date.parse(r.body.data.effective_at) - svc.clock.now(), 45_000, 'effective after PICKUP_SECONDS')
  t.same([...svc.service.store.placements.getKeys({ start: [ids['gym-a']!], end: [ids['gym-a'] + '\u0000'] } as never)].map((k) => (k as unknown as string[])[2]), [r.body.data.assignment_id], 'the screen\'s placements name it')
  const avail = await svc.request('POST', '/openrtb/v2/screens/availability', { key, body: { screen_ids: [ids['gym-a']], start_date: today, end_date: today } })
  t.match(avail.body.data.screens[0], { capacity: 5760, booked: 100, remaining: 5660 })
  const cases: Array<[Record<string, unknown>, number, string, string]> = [
    [{ ...body, screen_ids: undefined }, 400, 'missing_screen_ids', 'screen_ids'],
    [{ ...body, screen_ids: [ids['gym-a'], 'scr_nope'] }, 400, 'invalid_screen', 'screen_ids.1'],
    [{ ...body, creative_id: undefined }, 400, 'missing_creative_id', 'creative_id'],
    [{ ...body, spots_per_day: 5661 }, 409, 'capacity_unavailable', 'screen_ids.0']
  ]
  for (const [b, status, code, param] of cases) {
    const bad = await svc.request('POST', '/openrtb/v2/campaigns/assign', { key, body: b })
    t.equal(bad.status, status, code)
    t.match(bad.body, { error_code: code, param })
  }
  t.equal((await svc.request('GET', '/openrtb/v2/assignments', { key })).body.data.assignments.length, 1)
  t.match(svc.service.outbox.read('test', 500).filter((e) => e.type === 'campaign.allocated').at(-1), { data: { assignment_id: r.body.data.assignment_id, effective_at: r.body.data.effective_at } })
})

t.test('reservations: hold, TTL, confirm, release, and a race for the last spots', async (t) => {
  const svc = await startTestService(t)
  const { ids, key, creative } = await setup(svc)
  const other = await svc.onboard('camp_rival')
  const tomorrow = date(svc.clock.now() + DAY)
  const screen = ids['gym-a']!
  const hold = (k: string, spots: number) => svc.request('POST', '/openrtb/v2/reservations', { key: k, body: { screen_ids: [screen], start_date: tomorrow, end_date: tomorrow, spots_per_day: spots } })
  const booked = async () => (await svc.request('POST', '/openrtb/v2/screens/availability', { key, body: { screen_ids: [screen], start_date: tomorrow, end_date: tomorrow } })).body.data.screens[0].booked
  const first = await hold(key, 5000)
  t.equal(first.status, 201)
  t.match(first.body.data, { reservation_id: /^rsv_/, status: 'held', total_spots: 5000, expires_at: new Date(svc.clock.now() + 900_000).toISOString() })
  t.equal(await booked(), 5000, 'held spots are booked')
  // 760 spots are left: two seats ask for 700 at the same moment.
  const race = await Promise.all([hold(key, 700), hold(other.key, 700)])
  t.same(race.map((r) => r.status).sort(), [201, 409], 'exactly one wins')
  t.equal(race.find((r) => r.status === 409)!.body.error_code, 'capacity_unavailable')
  t.equal(await booked(), 5700)
  const id = first.body.data.reservation_id
  t.equal((await svc.request('GET', `/openrtb/v2/reservations/${id}`, { key: other.key })).body.error_code, 'reservation_not_found', 'another seat\'s reservation')
  const winner = race.find((r) => r.status === 201)!
  const winnerKey = winner === race[0] ? key : other.key
  const released = await svc.request('DELETE', `/openrtb/v2/reservations/${winner.body.data.reservation_id}`, { key: winnerKey })
  t.equal(released.body.data.status, 'released')
  t.equal(await booked(), 5000, 'released spots return')
  t.equal((await svc.request('DELETE', `/openrtb/v2/reservations/${winner.body.data.reservation_id}`, { key: winnerKey })).status, 409, 'released once')
  const confirmed = await svc.request('POST', `/openrtb/v2/reservations/${id}/confirm`, { key, body: { creative_id: creative } })
  t.match(confirmed.body.data, { status: 'confirmed', creative_id: creative, assignment_id: /^as_/ })
  t.equal(await booked(), 5000, 'confirmed spots stay booked, now as a placement')
  t.equal((await svc.request('POST', `/openrtb/v2/reservations/${id}/confirm`, { key, body: { creative_id: creative } })).body.error_code, 'invalid_transition')
  const short = await hold(key, 100)
  const shortId = short.body.data.reservation_id
  svc.clock.advance(900_001)
  for (const [method, path] of [['GET', `/openrtb/v2/reservations/${shortId}`], ['POST', `/openrtb/v2/reservations/${shortId}/confirm`], ['DELETE', `/openrtb/v2/reservations/${shortId}`]]) {
    const r = await svc.request(method!, path!, { key, ...(method === 'POST' ? { body: { creative_id: creative } } : {}) })
    t.equal(r.status, 410, `${method} after the hold`)
    t.equal(r.body.error_code, 'expired')
  }
  await svc.service.runJobs()
  t.equal(await booked(), 5000, 'expired spots return')
  const list = await svc.request('GET', '/openrtb/v2/reservations', { key })
  const statuses = list.body.data.reservations.map((r: { status: string }) => r.status)
  t.ok(statuses.includes('expired'), 'the lapsed hold is listed as expired')
  t.ok(statuses.includes('confirmed'))
  t.equal((await svc.request('GET', '/openrtb/v2/reservations/rsv_nope', { key })).body.error_code, 'reservation_not_found')
  for (const [body, code, param] of [[{ screen_ids: [screen], start_date: tomorrow, end_date: tomorrow }, 'missing_required_field', 'spots_per_day'], [{ screen_ids: ['scr_x'], start_date: tomorrow, end_date: tomorrow, spots_per_day: 1 }, 'invalid_screen', 'screen_ids.0'], [{ screen_ids: [screen], start_date: tomorrow, end_date: tomorrow, spots_per_day: 100000 }, 'invalid_parameter', 'spots_per_day']] as const) {
    const r = await svc.request('POST', '/openrtb/v2/reservations', { key, body })
    t.match(r.body, { error_code: code, param })
  }
})

t.test('deals: proposal, operator approval, offered to invited seats, carried in bid requests, expiry', async (t) => {
  const svc = await startTestService(t)
  const { ids, key } = await setup(svc)
  const invitee = await svc.onboard('deal_guest')
  const stranger = await svc.onboard('deal_stranger')
  await svc.admin('PUT', '/admin/v1/seats/deal_guest/rate-limits', { limits: { inventory: 10000 } })
  const end = date(svc.clock.now() + 3 * DAY)
  // From yesterday: deals run by each screen's own calendar, and the Austin screens may still be on yesterday's date.
  const base = { type: 'PMP', floor_cpm: 9, start_date: date(svc.clock.now() - DAY), end_date: end, invited_seats: ['deal_guest'], targeting: { venue_type: 'gym', country: 'US' } }
  const bad: Array<[Record<string, unknown>, number, string, string]> = [
    [{ ...base, floor_cpm: undefined }, 400, 'missing_floor_cpm', 'floor_cpm'],
    [{ ...base, type: 'Preferred' }, 400, 'missing_required_field', 'fixed_cpm'],
    [{ ...base, type: 'Guaranteed', fixed_cpm: 10 }, 400, 'missing_required_field', 'impressions_goal'],
    [{ ...base, type: 'Preferred', fixed_cpm: 5 }, 400, 'invalid_parameter', 'fixed_cpm'],
    [{ ...base, end_date: '2020-01-01', start_date: '2020-01-01' }, 400, 'invalid_date', 'end_date']
  ]
  for (const [body, status, code, param] of bad) {
    const r = await svc.request('POST', '/openrtb/v2/deals/propose', { key, body })
    t.equal(r.status, status, code)
    t.match(r.body, { error_code: code, param })
  }
  const proposed = await svc.request('POST', '/openrtb/v2/deals/propose', { key, body: { ...base, deal_id: 'gym-pmp-1', name: 'Gyms PMP' } })
  t.equal(proposed.status, 201)
  t.match(proposed.body.data, { deal_id: 'gym-pmp-1', status: 'pending', invited_seats: ['camp_buyer', 'deal_guest'], proposed_by: 'camp_buyer' })
  t.equal((await svc.request('POST', '/openrtb/v2/deals/propose', { key, body: { ...base, deal_id: 'gym-pmp-1' } })).body.error_code, 'deal_already_exists')
  t.equal((await svc.request('GET', '/openrtb/v2/deals/gym-pmp-1', { key: invitee.key })).status, 404, 'pending: only the proposer sees it')
  t.equal((await svc.request('GET', '/openrtb/v2/deals/', { key })).body.error_code, 'missing_deal_id')
  const approved = await svc.admin('POST', '/admin/v1/deals/gym-pmp-1/approve', { reason: 'standard PMP terms' })
  t.equal(approved.body.data.status, 'active')
  t.equal((await svc.admin('POST', '/admin/v1/deals/gym-pmp-1/approve')).body.error_code, 'invalid_transition')
  t.same((await svc.request('GET', '/openrtb/v2/deals', { key: invitee.key })).body.data.deals.map((d: { deal_id: string }) => d.deal_id), ['gym-pmp-1'])
  t.equal((await svc.request('GET', '/openrtb/v2/deals/gym-pmp-1', { key: stranger.key })).body.error_code, 'deal_not_found', 'not offered to an uninvited seat')
  const bidRequests = async (k: string) => (await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=50', { key: k })).body.data.bid_requests as any[]
  const withDeal = (await bidRequests(invitee.key)).filter((b) => b.imp[0].pmp !== undefined)
  t.same(withDeal.map((b) => b.ext.trb.screen_id).sort(), [ids['gym-a'], ids['gym-b']].sort(), 'US gyms carry the deal')
  t.match(withDeal[0].imp[0].pmp, { private_auction: 0, deals: [{ id: 'gym-pmp-1', bidfloor: 9, bidfloorcur: 'USD', at: 1, wseat: ['camp_buyer', 'deal_guest'] }] })
  t.equal((await bidRequests(stranger.key)).filter((b) => b.imp[0].pmp !== undefined).length, 0, 'not in an uninvited seat\'s bid requests')
  await svc.admin('POST', '/admin/v1/deals/gym-pmp-1/pause')
  t.equal((await bidRequests(invitee.key)).filter((b) => b.imp[0].pmp !== undefined).length, 0, 'a paused deal leaves the bid requests')
  await svc.admin('POST', '/admin/v1/deals/gym-pmp-1/resume')
  svc.clock.advance(3 * DAY)
  await svc.service.runJobs()
  t.equal((await svc.request('GET', '/openrtb/v2/deals/gym-pmp-1', { key: invitee.key })).body.data.status, 'active', 'its last day is not over on every screen\'s calendar yet')
  svc.clock.advance(DAY + 12 * 3_600_000)
  await svc.service.runJobs()
  t.equal((await svc.request('GET', '/openrtb/v2/deals/gym-pmp-1', { key: invitee.key })).body.data.status, 'expired')
  const tomorrow = date(svc.clock.now() + DAY)
  const guaranteed = await svc.request('POST', '/openrtb/v2/deals/propose', { key, body: { type: 'Guaranteed', deal_id: 'tor-g', floor_cpm: 3, fixed_cpm: 4, impressions_goal: 2000, start_date: tomorrow, end_date: tomorrow, targeting: { country: 'CA' } } })
  t.equal(guaranteed.status, 201)
  await svc.admin('POST', '/admin/v1/deals/tor-g/approve')
  const avail = await svc.request('POST', '/openrtb/v2/screens/availability', { key, body: { screen_ids: [ids.tor], start_date: tomorrow, end_date: tomorrow } })
  t.match(avail.body.data.screens[0], { booked: 2000, remaining: 3760 }, 'a guaranteed deal is subtracted from availability')
  const huge = await svc.request('POST', '/openrtb/v2/deals/propose', { key, body: { type: 'Guaranteed', deal_id: 'tor-huge', floor_cpm: 3, fixed_cpm: 4, impressions_goal: 100000, start_date: tomorrow, end_date: tomorrow, targeting: { country: 'CA' } } })
  t.equal(huge.status, 201)
  t.equal((await svc.admin('POST', '/admin/v1/deals/tor-huge/approve')).body.error_code, 'capacity_unavailable', 'more than the screens can play is refused')
  t.equal((await svc.admin('POST', '/admin/v1/deals/tor-huge/reject', { reason: 'too large' })).body.data.status, 'rejected')
  const audit = await svc.admin('GET', '/admin/v1/audit?subject=deal:tor-huge')
  t.same(audit.body.data.events.map((e: { type: string }) => e.type), ['audit.deal.rejected'])
})
