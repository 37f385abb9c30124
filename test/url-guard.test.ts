import t from 'tap'
import { callbackUrlProblem, isPublicAddress } from '../src/net/url-guard.js'

t.test('private, loopback, link-local and reserved addresses in every spelling are refused', async (t) => {
  const refused = [
    'http://example.com/hook', 'https://localhost/x', 'https://api.localhost/x', 'https://printer.local/x', 'https://intranet/x',
    'https://127.0.0.1/x', 'https://127.1/x', 'https://2130706433/x', 'https://0x7f000001/x', 'https://0177.0.0.1/x',
    'https://10.0.0.1/x', 'https://172.16.5.4/x', 'https://192.168.0.10/x', 'https://169.254.169.254/latest', 'https://100.64.1.1/x', 'https://0.0.0.0/x',
    'https://[::1]/x', 'https://[::]/x', 'https://[fe80::1]/x', 'https://[fc00::1]/x', 'https://[fd12:3456::1]/x', 'https://[::ffff:127.0.0.1]/x',
    'https://[::ffff:a00:1]/x', 'https://[64:ff9b::a00:1]/x', 'https://[ff02::1]/x', 'https://user:pw@example.com/x', 'not a url'
  ]
  for (const url of refused) t.type(callbackUrlProblem(url), 'string', url)
})

t.test('public hosts and addresses pass', async (t) => {
  for (const url of ['https://hooks.example.com/oohbid', 'https://8.8.8.8/x', 'https://[2606:4700::1111]/x', 'https://example.com:8443/a?b=c']) {
    t.equal(callbackUrlProblem(url), undefined, url)
  }
  t.ok(isPublicAddress('1.1.1.1'))
  t.notOk(isPublicAddress('not-an-ip'))
  t.equal(callbackUrlProblem('https://127.0.0.1:9443/x', true), undefined, 'the test escape hatch allows loopback')
})
