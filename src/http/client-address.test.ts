import t from 'tap'
import { clientIp } from './client-address.js'

t.test('the client is the socket, unless a trusted proxy names it: then the nearest untrusted hop', async (t) => {
  t.equal(clientIp('203.0.113.9', undefined, []), '203.0.113.9', 'no header')
  t.equal(clientIp('203.0.113.9', '198.51.100.1', []), '203.0.113.9', 'a header from an untrusted socket is ignored')
  t.equal(clientIp('10.0.0.2', '198.51.100.1', ['10.0.0.2']), '198.51.100.1', 'one trusted proxy')
  t.equal(clientIp('10.0.0.2', '6.6.6.6, 198.51.100.1, 10.0.0.3', ['10.0.0.2', '10.0.0.3']), '198.51.100.1', 'a spoofed first hop does not count past the nearest untrusted one')
  t.equal(clientIp('10.0.0.2', '10.0.0.3', ['10.0.0.2', '10.0.0.3']), '10.0.0.3', 'every hop trusted: the first')
  t.equal(clientIp('10.0.0.2', ' , ', ['10.0.0.2']), '10.0.0.2', 'an empty header: the socket')
})
