import { approvedCreative } from './creatives.js'
import { deviceBody, registerPartner, sendAudience } from './fleet.js'
import { startReceiver, type Received } from './receiver.js'
import { type TestService } from './service.js'

// The market the auction tests run in: three seats bidding on one partner's screen, and the receivers of their notices.

export const MONDAY_NOON_AUSTIN = Date.UTC(2026, 10, 23, 18, 0, 0)

export type SeatName = 'alpha' | 'bravo' | 'charlie'

export async function market (t: { teardown (fn: () => unknown): void }, svc: TestService) {
  const rx = await startReceiver(t)
  const legacy = await startReceiver(t, true)
  const p = await registerPartner(svc)
  const dev = await svc.request('POST', '/v1/partner/device', { key: p.key, body: deviceBody('lobby', { floor_price_cpm: 2, location: { venue_type: 'hotel_lobby' } }) })
  const screenId = dev.body.data.screen_id as string
  const token = new URL(dev.body.data.embed_url).pathname.split('/').pop()!
  await sendAudience(svc, p, [{ device_id: 'lobby', live_face_count: 6, attention_score: 0.5 }])
  const seats = {} as Record<SeatName, { key: string, creative: string, imp: string, prefix: string }>
  for (const id of ['alpha', 'bravo', 'charlie'] as const) {
    const { key } = await svc.onboard(id, { notification_url: `${legacy.url}/notify/${id}` })
    await svc.admin('PUT', `/admin/v1/seats/${id}/rate-limits`, { limits: { inventory: 100000, bidding: 100000, campaigns: 100000, deals: 100000 } })
    await svc.admin('POST', `/admin/v1/seats/${id}/approve`)
    const creative = await approvedCreative(svc, key, `${id} ad`)
    const requests = (await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=10', { key })).body.data.bid_requests as any[]
    seats[id] = { key, creative, imp: requests.find((r) => r.ext.trb.screen_id === screenId).imp[0].id, prefix: key.slice(0, 12) }
  }
  const bid = async (id: SeatName, price: number, extra: Record<string, unknown> = {}) => {
    const s = seats[id]
    const r = await svc.request('POST', '/openrtb/v2/bid', {
      key: s.key,
      body: {
        id: `auction-${id}`,
        bidid: `response-${id}`,
        seatbid: [{
          seat: id,
          bid: [{
            id: `bid-${id}`, impid: s.imp, price, crid: s.creative, adm: `<div>${id}</div>`, adomain: [`${id}.example`],
            nurl: `${rx.url}/win?seat=${id}&price=\${AUCTION_PRICE}&imp=\${AUCTION_IMP_ID}&bid=\${AUCTION_BID_ID}&auction=\${AUCTION_ID}&mult=\${AUCTION_MULTIPLIER}&cur=\${AUCTION_CURRENCY}`,
            lurl: `${rx.url}/loss?seat=${id}&code=\${AUCTION_LOSS}&min=\${AUCTION_MIN_TO_WIN}`,
            burl: `${rx.url}/bill?seat=${id}&price=\${AUCTION_PRICE}&mult=\${AUCTION_MULTIPLIER}&ts=\${AUCTION_IMP_TS}`,
            ...extra
          }]
        }]
      }
    })
    if (r.body.data?.accepted !== 1) throw new Error(`bid of ${id} not accepted: ${r.text}`)
    return r
  }
  /** The open auction several tests start from: bravo's 7 wins at 6.01 over charlie's 6 and alpha's 5. */
  const threeBids = async () => {
    await bid('alpha', 5)
    await bid('bravo', 7)
    await bid('charlie', 6)
  }
  const next = async () => {
    const r = await svc.request('POST', `/embed/${token}/spots`, { body: {} })
    if (r.status !== 201 && r.status !== 200) throw new Error(r.text)
    return r.body.data
  }
  /** Notices delivered since the last call. */
  let seen = 0
  let seenLegacy = 0
  const delivered = async () => {
    await svc.service.sender.idle()
    const out = { rtb: rx.received.slice(seen), legacy: legacy.received.slice(seenLegacy) }
    seen = rx.received.length
    seenLegacy = legacy.received.length
    return out
  }
  return { rx, legacy, p, screenId, token, seats, bid, threeBids, next, delivered }
}

export const bySeat = (list: Received[], path: string): Record<string, Record<string, string>> => Object.fromEntries(list.filter((r) => r.path === path).map((r) => [r.query.get('seat'), Object.fromEntries(r.query)]))

