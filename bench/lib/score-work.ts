// The work every baseline does per bid response: parse, validate against the same OpenRTB 2.6 schema (oohbid's
// precompiled validator), check each bid's price against a floor. Shared by the Fastify and piscina baselines.
import { BidResponse } from '../../src/generated/validators.js'

export const FLOOR = 5

/** Parses, validates and floor-checks one body; returns the reply text. */
export function scoreBody (text: string): { status: number, body: string } {
  let doc: { id: string, seatbid?: Array<{ bid: Array<{ id: string, price: number }> }> }
  try {
    doc = JSON.parse(text)
  } catch {
    return { status: 400, body: '{"success":false,"error_code":"invalid_bid_response","nbr":2}' }
  }
  if (!BidResponse(doc)) return { status: 400, body: '{"success":false,"error_code":"invalid_bid_response","nbr":2}' }
  const results = (doc.seatbid ?? []).flatMap((sb) => sb.bid.map((b) => ({ bid_id: b.id, status: b.price >= FLOOR ? 'accepted' : 'rejected' })))
  return { status: 200, body: JSON.stringify({ success: true, data: { id: doc.id, results } }) }
}
