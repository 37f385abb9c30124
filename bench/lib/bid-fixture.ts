import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { benchCreative, jsonClient } from './fixtures.js'
import { benchSeat } from './seat.js'

const run = promisify(execFile)
const simulator = fileURLToPath(new URL('../../scripts/simulate-fleet.js', import.meta.url))

/** The benchmarks' BidResponse: one bid with a DSP's usual notice URL, markup and ext. */
export function bidResponseBody (id: string, impid: string, price: number, crid: string): string {
  return JSON.stringify({
    id,
    cur: 'USD',
    seatbid: [{ seat: 'bench-dsp', bid: [{ id: 'bench-bid-1', impid, price, crid, adomain: ['brand.example'], nurl: 'https://dsp.example/win?p=${AUCTION_PRICE}', adm: `<a href="https://brand.example"><img src="https://cdn.example/${'x'.repeat(640)}.png"></a>`, ext: { dsp: { campaign: 'spring' } } }] }]
  })
}

/**
 * A bid the service accepts, repeatable at any rate: 50 simulated screens, an approved seat with a moderated creative,
 * and a BidResponse for one of the imps GET /adslots issued (its bid stored again on each repeat), on the first screen
 * pick takes (a cluster's bench picks one its taking node does not own). fleetState: a file the simulator keeps its
 * partners' keys in (its --state).
 */
export async function acceptedBid (oohbid: { url: string, adminToken: string }, fleetState?: string, pick: (screenId: string) => boolean = () => true): Promise<{ key: string, body: string, sample: string, screenId: string }> {
  await run(process.execPath, [simulator, '--screens', '50', '--base-url', oohbid.url, '--duration', '0', '--quiet', ...(fleetState !== undefined ? ['--state', fleetState] : [])])
  const key = await benchSeat(oohbid.url, oohbid.adminToken, 'bench', ['bidding', 'inventory', 'creatives', 'account'])
  const admin = { authorization: `Bearer ${oohbid.adminToken}`, 'content-type': 'application/json' }
  const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' }
  await fetch(`${oohbid.url}/admin/v1/seats/bench/approve`, { method: 'POST', headers: admin, body: '{}' })
  const creativeId = await benchCreative(jsonClient(oohbid.url), key, oohbid.adminToken)
  const offers = await fetch(`${oohbid.url}/openrtb/v2/adslots?format=openrtb&limit=50`, { headers: auth }).then((r) => r.json()) as { data: { bid_requests: Array<{ id: string, imp: Array<{ id: string, bidfloor: number }>, ext: { trb: { screen_id: string } } }> } }
  const offer = offers.data.bid_requests.find((r) => pick(r.ext.trb.screen_id))
  if (offer === undefined) throw new Error('no screen of the bench fleet is one the bench can bid on')
  const body = bidResponseBody(offer.id, offer.imp[0]!.id, offer.imp[0]!.bidfloor + 1, creativeId)
  const sample = await fetch(`${oohbid.url}/openrtb/v2/bid`, { method: 'POST', headers: auth, body }).then((r) => r.text())
  if (!sample.includes('"accepted":1')) throw new Error(`the bench bid was not accepted: ${sample}`)
  return { key, body, sample, screenId: offer.ext.trb.screen_id }
}
