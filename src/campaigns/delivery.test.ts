import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { ManualClock } from '../clock.js'
import { Outbox } from '../store/outbox.js'
import { openStore } from '../store/store.js'
import { addLease, adoptCampaignDelivery, campaignView, deliveredOf, leasedLeft } from './delivery.js'
import { charge, headroom, hold, ledgerOf } from './budget.js'
import { clusterShare } from '../cluster/share.js'
import { ServedPartitions } from '../cluster/served-partitions.js'
import { campaignJobsDue, recordDelivery, runCampaignJobs } from './lifecycle.js'
import type { CampaignRecord } from './records.js'

// What campaigns delivered, a row per node: on a cluster each node writes only its own, and the campaign's delivery is
// their sum. A store stands for one node; the other node's row is written as the applier would write it.

const NOW = Date.parse('2026-11-24T12:00:00Z')
const campaign: CampaignRecord = { campaign_id: 'cmp_a', seat_id: 'Seat', name: 'A', creative_id: 'cr_a', status: 'active', targeting: {}, budget_usd: 1, pacing: 'asap', start_date: '2026-11-20', end_date: '2026-11-29', matching_screens: 1, goal_impressions: 10, created_at: '2026-11-20T00:00:00.000Z', updated_at: '2026-11-20T00:00:00.000Z' }

function node (t: { teardown (fn: () => unknown): void }, id: string) {
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-delivery-'))
  // A cluster node's asks for budget, as its supervisor would receive them.
  const asks: Array<[string, number]> = []
  const share = id === '' ? undefined : clusterShare(id, new ServedPartitions(1), { leasedLeft, ask: (campaignId, want) => asks.push([campaignId, want]) })
  const store = openStore(dir, undefined, undefined, share !== undefined ? { share } : {})
  t.teardown(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })
  const outbox = new Outbox(store, new ManualClock(NOW))
  const events = () => [...store.outbox.getRange()].map(({ value }) => value.type)
  return { store, outbox, events, asks }
}

t.test('each node adds to its own row; the campaign shows the sum; the catalog\'s job raises its start and end once', async (t) => {
  const { store, outbox, events } = node(t, 'node-1')
  store.write(() => store.campaigns.putSync('cmp_a', campaign))
  store.write(() => store.campaignDelivery.putSync(['cmp_a', 'node-2'], { impressions: 4, spent_micros: 250_000, day: '2026-11-23', day_spent_micros: 250_000, started_at: '2026-11-23T11:00:00.000Z' }))
  store.write(() => recordDelivery(store, outbox, 'cmp_a', 3, 125_000, NOW))
  t.same(deliveredOf(store, 'cmp_a', NOW), { impressions: 7, spent_micros: 375_000, day_spent_micros: 125_000, leased_micros: 0, started_at: '2026-11-23T11:00:00.000Z' }, 'node-2\'s 4 and this node\'s 3; today\'s spend is this node\'s, node-2 spent yesterday')
  t.same(store.campaignDelivery.get(['cmp_a', 'node-1']), { impressions: 3, spent_micros: 125_000, day: '2026-11-24', day_spent_micros: 125_000, started_at: '2026-11-24T12:00:00.000Z' }, 'this node wrote only its own row')
  t.same(events(), [], 'a cluster node\'s play raises nothing itself')
  t.match(campaignView(store, store.campaigns.get('cmp_a')!), { status: 'active', impressions: 7, spent_usd: 0.375 })
  t.notOk('seat_id' in campaignView(store, store.campaigns.get('cmp_a')!), 'the view leaves the owner out')
  runCampaignJobs(store, outbox, NOW)
  t.same(events(), ['campaign.started'], 'the job raises the start, from node-2\'s first impression')
  t.equal(store.campaigns.get('cmp_a')!.started_at, '2026-11-23T11:00:00.000Z')
  store.write(() => recordDelivery(store, outbox, 'cmp_a', 3, 125_000, NOW))
  t.match(store.campaigns.get('cmp_a'), { status: 'active' }, 'the goal reached over both nodes: still active until the job runs')
  t.ok(campaignJobsDue(store, NOW))
  runCampaignJobs(store, outbox, NOW)
  runCampaignJobs(store, outbox, NOW)
  t.match(store.campaigns.get('cmp_a'), { status: 'completed', completed_reason: 'goal_impressions reached' })
  t.same(events(), ['campaign.started', 'campaign.completed'], 'each raised once')
  t.notOk(campaignJobsDue(store, NOW))
  t.equal(store.write(() => recordDelivery(store, outbox, 'cmp_a', 1, 0, NOW)), undefined, 'a completed campaign records no more')
})

t.test('on one node the first impression starts the campaign and the budget spent ends it at once', async (t) => {
  const { store, outbox, events } = node(t, '')
  store.write(() => store.campaigns.putSync('cmp_a', { ...campaign, goal_impressions: undefined } as CampaignRecord))
  store.write(() => recordDelivery(store, outbox, 'cmp_a', 1, 500_000, NOW))
  t.same(events(), ['campaign.started'])
  store.write(() => recordDelivery(store, outbox, 'cmp_a', 1, 500_000, NOW))
  t.same(events(), ['campaign.started', 'campaign.completed'], 'the budget spent completes it')
  t.notOk(campaignJobsDue(store, NOW), 'nothing left for the job')
})

t.test('a cluster node spends its leases: it commits while any is left, and asks for the next part under half of one', async (t) => {
  const { store, asks } = node(t, 'node-1')
  store.write(() => store.campaigns.putSync('cmp_a', { ...campaign, budget_usd: 2 }))
  t.equal(headroom(campaign, ledgerOf(store, 'cmp_a', NOW), NOW), 0, 'nothing leased: nothing to commit')
  t.same(asks, [['cmp_a', 100_000]], 'and the node asks for 5% of the $2 budget')
  ledgerOf(store, 'cmp_a', NOW)
  t.equal(asks.length, 1, 'once while that ask is on its way')
  store.write(() => addLease(store, 'cmp_a', 100_000, 7, NOW))
  store.write(() => addLease(store, 'cmp_a', 100_000, 7, NOW))
  t.equal(deliveredOf(store, 'cmp_a').leased_micros, 100_000, 'a grant counted once, however often its log is applied')
  store.write(() => store.campaignDelivery.putSync(['cmp_a', 'node-1'], { ...store.campaignDelivery.get(['cmp_a', 'node-1'])!, spent_micros: 60_000 }))
  const l = ledgerOf(store, 'cmp_a', NOW)
  t.equal(l.lease_left_micros, 40_000, 'leased less spent')
  store.write(() => recordDelivery(store, new Outbox(store, new ManualClock(NOW + 60_000)), 'cmp_a', 2, 0, NOW + 60_000))
  t.equal(deliveredOf(store, 'cmp_a').started_at, new Date(NOW + 60_000).toISOString(), 'the first impression, not the lease that made the row, starts it')
  t.equal(headroom({ ...campaign, budget_usd: 2, pacing: 'asap' }, l, NOW), Infinity, 'some left: a play that costs more may still be committed, so no remnant is stranded')
})

t.test('delivery an earlier version kept in the campaign\'s row and its ledger moves to a delivery row once', async (t) => {
  const { store } = node(t, '')
  store.write(() => {
    store.campaigns.putSync('cmp_a', { ...campaign, impressions: 5, spent_usd: 0.5, started_at: '2026-11-21T00:00:00.000Z' } as CampaignRecord)
    store.ledgers.putSync('cmp_a', { spent_micros: 600_000, reserved_micros: 0, day: '2026-11-24', day_spent_micros: 100_000 } as never)
    store.campaigns.putSync('cmp_b', { ...campaign, campaign_id: 'cmp_b', impressions: 0, spent_usd: 0 } as CampaignRecord)
  })
  adoptCampaignDelivery(store)
  t.same(deliveredOf(store, 'cmp_a', NOW), { impressions: 5, spent_micros: 600_000, day_spent_micros: 100_000, leased_micros: 0, started_at: '2026-11-21T00:00:00.000Z' }, 'the ledger counted a win billed after the campaign ended: its spend is kept')
  t.notOk('impressions' in store.campaigns.get('cmp_a')!, 'the row keeps no counts')
  t.same(deliveredOf(store, 'cmp_b'), { impressions: 0, spent_micros: 0, day_spent_micros: 0, leased_micros: 0 }, 'nothing delivered: no row')
  store.write(() => store.campaigns.putSync('cmp_c', { ...campaign, campaign_id: 'cmp_c', impressions: 9 } as CampaignRecord))
  adoptCampaignDelivery(store)
  t.equal(deliveredOf(store, 'cmp_c').impressions, 0, 'moved once: a later start reads no campaign row again')
})

t.test('a win billed after its campaign stopped still spent its cost; held budget is this node\'s alone', async (t) => {
  const { store, outbox, events } = node(t, '')
  store.write(() => store.campaigns.putSync('cmp_a', { ...campaign, status: 'paused', goal_impressions: undefined } as CampaignRecord))
  store.write(() => hold(store, 'cmp_a', 300_000))
  t.same(ledgerOf(store, 'cmp_a', NOW), { spent_micros: 0, reserved_micros: 300_000, day: '2026-11-24', day_spent_micros: 0 })
  store.write(() => charge(store, outbox, 'cmp_a', 300_000, 200_000, 40, NOW))
  t.same(ledgerOf(store, 'cmp_a', NOW), { spent_micros: 200_000, reserved_micros: 0, day: '2026-11-24', day_spent_micros: 200_000 }, 'spent, and nothing held any more')
  t.equal(deliveredOf(store, 'cmp_a').impressions, 0, 'a paused campaign counts no impressions')
  t.same(events(), [], 'and raises no event')
  t.equal(store.ledgers.get('cmp_a'), undefined, 'a hold given back in full leaves no row')
})
