#!/usr/bin/env node
// The demo buyer of `npm start`: a seat with an approved creative and a campaign placed on a few screens, and a small
// DSP loop that pulls bid requests (GET /adslots?format=openrtb) and bids on some of them, so that auctions, wins,
// proofs, the funnel and the reports fill within a minute of the start. It goes through the public API, and through
// the operator API for what an operator does (approving the seat), as a real buyer and operator would.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import sharp from 'sharp'
import { apiClient } from './lib/api-client.js'
import { stdoutLines } from './lib/output.js'

const { values: args } = parseArgs({
  options: {
    'base-url': { type: 'string', default: process.env.BASE_URL ?? `http://127.0.0.1:${process.env.PORT ?? 8080}` },
    state: { type: 'string', description: 'file keeping the seat key, creative and campaign between runs' },
    interval: { type: 'string', default: '5', description: 'seconds between two pulls of bid requests' },
    quiet: { type: 'boolean', default: false }
  },
  strict: true
})
const base = args['base-url']!.replace(/\/+$/, '')
const adminToken = process.env.ADMIN_TOKEN
if (adminToken === undefined) throw new Error('ADMIN_TOKEN: the operator token, to approve the demo seat')
const interval = Number(args.interval) * 1000
const ADVERTISER = 'democoffee.example'

interface State { seat_id: string, key: string, creative_id?: string, campaign_id?: string }

const out = stdoutLines('demo buyer: ')
function log (line: string): void {
  if (!args.quiet) out(line)
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const call = apiClient(base)

function save (state: State): State {
  if (args.state !== undefined) writeFileSync(args.state, JSON.stringify(state, null, 2), { mode: 0o600 })
  return state
}

/** The demo seat: the one this data directory already has, else a new one (demo-buyer, or demo-buyer-N if taken). */
async function seat (): Promise<State> {
  if (args.state !== undefined && existsSync(args.state)) {
    const known = JSON.parse(readFileSync(args.state, 'utf8')) as State
    if ((await call('GET', '/openrtb/v2/seat', undefined, known.key)).status === 200) return known
  }
  for (let n = 1; ; n++) {
    const seatId = n === 1 ? 'demo-buyer' : `demo-buyer-${n}`
    const r = await call('POST', '/openrtb/v2/onboard', { company_name: 'Demo Coffee Co', seat_id: seatId, contact_email: `buyer@${ADVERTISER}` })
    if (r.status === 201) return save({ seat_id: seatId, key: r.body.data.api_key.key })
    if (r.status !== 409) throw new Error(`onboarding failed: ${r.status} ${JSON.stringify(r.body)}`)
  }
}

/** The seat's creative: a 1920x1080 card uploaded, moderated, and approved by the operator if moderation held it. */
async function creative (state: State): Promise<string> {
  if (state.creative_id !== undefined) return state.creative_id
  const svg = '<svg width="1920" height="1080" xmlns="http://www.w3.org/2000/svg"><rect width="100%" height="100%" fill="#3b2314"/>' +
    '<text x="120" y="480" font-size="170" font-family="sans-serif" font-weight="bold" fill="#f5e6d3">Demo Coffee</text>' +
    '<text x="120" y="680" font-size="100" font-family="sans-serif" fill="#e8b04a">Fresh roast, every morning</text></svg>'
  const png = await sharp(Buffer.from(svg)).png().toBuffer()
  const created = await call('POST', '/openrtb/v2/creatives', { name: 'Demo Coffee card', content_type: 'image/png', mode: 'upload', advertiser_domain: ADVERTISER }, state.key)
  if (created.status !== 201) throw new Error(`creative failed: ${created.status} ${JSON.stringify(created.body)}`)
  const id = created.body.data.creative_id as string
  await fetch(created.body.data.upload.url, { method: 'PUT', headers: { 'content-type': 'image/png' }, body: png })
  await call('POST', `/openrtb/v2/creatives/${id}/confirm`, {}, state.key)
  let status = 'pending_moderation'
  while (status === 'pending_moderation') {
    await sleep(250)
    status = (await call('GET', `/openrtb/v2/creatives/${id}`, undefined, state.key)).body.data.status
  }
  if (status !== 'approved') await call('POST', `/admin/v1/creatives/${id}/review`, { decision: 'approved', reason: 'demo creative' }, adminToken)
  log(`creative ${id} ${status === 'approved' ? 'approved by moderation' : `was ${status}, approved by the operator`}`)
  save({ ...state, creative_id: id })
  return id
}

/** A campaign for the creative, placed on the first screens the seat is offered (a guaranteed line on each). */
async function campaign (state: State, creativeId: string): Promise<void> {
  if (state.campaign_id !== undefined) return
  const created = await call('POST', '/openrtb/v2/campaigns', { name: 'Demo Coffee launch', creative_id: creativeId }, state.key)
  if (created.status !== 201) throw new Error(`campaign failed: ${created.status} ${JSON.stringify(created.body)}`)
  const campaignId = created.body.data.campaign_id as string
  // The fleet registers its screens while this starts: wait until some are offered.
  let offered: any[] = []
  for (let i = 0; i < 60 && offered.length === 0; i++) {
    if (i > 0) await sleep(2000)
    offered = (await call('GET', '/openrtb/v2/adslots?format=openrtb&limit=5', undefined, state.key)).body.data?.bid_requests ?? []
  }
  const screenIds = offered.map((r: any) => r.ext.trb.screen_id as string)
  if (screenIds.length > 0) {
    const placed = await call('POST', '/openrtb/v2/campaigns/assign', { creative_id: creativeId, campaign_id: campaignId, screen_ids: screenIds }, state.key)
    log(placed.status === 201 ? `campaign ${campaignId} placed on ${screenIds.length} screens` : `campaign ${campaignId}: placement refused (${placed.body.error_code})`)
  }
  save({ ...state, campaign_id: campaignId })
}

/** Pulls bid requests and bids on about half of them, above each floor; every 30 s a line from GET /stats. */
async function bidLoop (state: State, creativeId: string): Promise<void> {
  let stop = false
  process.once('SIGINT', () => { stop = true })
  process.once('SIGTERM', () => { stop = true })
  let lastLine = 0
  while (!stop) {
    const started = Date.now()
    const page = (await call('GET', '/openrtb/v2/adslots?format=openrtb&limit=40', undefined, state.key)).body.data?.bid_requests ?? []
    for (const request of page as any[]) {
      if (Math.random() < 0.5) continue
      const imp = request.imp[0]
      const price = Math.round(imp.bidfloor * (1.1 + Math.random() * 0.6) * 100) / 100
      await call('POST', '/openrtb/v2/bid', {
        id: request.id,
        seatbid: [{ seat: state.seat_id, bid: [{ id: `demo-${imp.id.slice(-12)}`, impid: imp.id, price, crid: creativeId, adm: '<div>Demo Coffee</div>', adomain: [ADVERTISER] }] }]
      }, state.key)
    }
    if (Date.now() - lastLine >= 30_000) {
      lastLine = Date.now()
      const stats = (await call('GET', '/openrtb/v2/stats', undefined, state.key)).body
      if (stats.success === true) log(`${stats.data.accepted} bids accepted, ${stats.data.wins} won, $${stats.data.spend_usd} spent in the last 24 h`)
    }
    await sleep(Math.max(0, started + interval - Date.now()))
  }
}

// Forked by `npm start` beside the demo fleet: it goes when the service goes, kill -9 included.
process.once('disconnect', () => process.exit(0))
let state = await seat()
const approved = await call('POST', `/admin/v1/seats/${state.seat_id}/approve`, { reason: 'demo buyer' }, adminToken)
if (approved.status !== 200 && approved.body.error_code !== 'invalid_transition') throw new Error(`approval failed: ${approved.status} ${JSON.stringify(approved.body)}`)
log(`seat ${state.seat_id} approved`)
const creativeId = await creative(state)
state = { ...state, creative_id: creativeId }
await campaign(state, creativeId)
await bidLoop(state, creativeId)
