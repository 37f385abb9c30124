// Baseline: what a Node team would build instead. Fastify 5 doing the same JSON parse, schema validation and floor
// check as oohbid's /bid, on its own (node:http) server.
import Fastify from 'fastify'
import { scoreBody } from './score-work.js'

const app = Fastify({ logger: false })
app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => done(null, body))
app.post('/openrtb/v2/bid', async (req, reply) => {
  const { status, body } = scoreBody(req.body as string)
  return reply.code(status).type('application/json').send(body)
})
const address = await app.listen({ host: '127.0.0.1', port: 0 })
process.stdout.write(`fastify listening on ${address}\n`)
