// Baseline for the exchange bidder endpoint: Fastify 5 doing the same JSON parse, OpenRTB 2.6 bid request
// validation (oohbid's precompiled validator) and floor check, answering a constant bid.
import Fastify from 'fastify'
import { ExchangeBidRequest } from '../../src/generated/validators.js'

const PRICE = 5
const app = Fastify({ logger: false })
app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => done(null, body))
app.post('/openrtb/bidder/:alias/bid', async (req, reply) => {
  let doc: { id: string, imp: Array<{ id: string, bidfloor?: number }> }
  try {
    doc = JSON.parse(req.body as string)
  } catch {
    return reply.code(400).type('application/json').send('{"success":false,"error_code":"invalid_bid_request","nbr":2}')
  }
  if (!ExchangeBidRequest(doc)) return reply.code(400).type('application/json').send('{"success":false,"error_code":"invalid_bid_request","nbr":2}')
  const bids = doc.imp.filter((imp) => (imp.bidfloor ?? 0) <= PRICE).map((imp) => ({ id: `b-${imp.id}`, impid: imp.id, price: PRICE, adm: '<img src="https://cdn.example/a.png">', crid: 'cr_1' }))
  if (bids.length === 0) return reply.code(204).send()
  return reply.type('application/json').send(JSON.stringify({ id: doc.id, cur: 'USD', seatbid: [{ seat: 'brand', bid: bids }] }))
})
const address = await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`fastify listening on ${address}\n`)
