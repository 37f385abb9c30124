import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { callbackUrlProblem, isPublicAddress } from './url-guard.js'

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

// The IANA special-purpose registries, as a table of their own (test/fixtures/iana): each block's first, middle and
// last address is refused, literally and in a callback URL, and so is every IPv6 form that embeds an IPv4 block.
const IANA = JSON.parse(readFileSync(join(process.cwd(), 'test', 'fixtures', 'iana', 'special-purpose.json'), 'utf8')) as { ipv4: Array<[string, string, string, boolean]>, ipv6: Array<[string, string, string, boolean]> }

function v4Text (n: bigint): string {
  return [24n, 16n, 8n, 0n].map((s) => String((n >> s) & 255n)).join('.')
}

function v6Text (n: bigint): string {
  return Array.from({ length: 8 }, (_, i) => ((n >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(':')
}

function v6Value (text: string): bigint {
  const [head, tail] = text.split('::') as [string, string | undefined]
  const h = head ? head.split(':') : []
  const tl = tail ? tail.split(':') : []
  const words = [...h, ...new Array(8 - h.length - tl.length).fill('0'), ...tl]
  return words.reduce((n, w) => (n << 16n) | BigInt(parseInt(w, 16)), 0n)
}

/** First, middle and last address of a block, as text. */
function samples (cidr: string, v6: boolean): string[] {
  const [base, bitsText] = cidr.split('/') as [string, string]
  const width = v6 ? 128n : 32n
  const host = width - BigInt(bitsText)
  const first = v6 ? v6Value(base) : base.split('.').reduce((n, p) => (n << 8n) | BigInt(p), 0n)
  const last = first + (1n << host) - 1n
  const text = v6 ? v6Text : v4Text
  return [...new Set([text(first), text(first + (last - first) / 2n), text(last)])]
}

t.test('every block of the IANA special-purpose registries is refused, in every spelling', async (t) => {
  t.equal(IANA.ipv4.length, 26, 'IPv4 registry entries')
  t.equal(IANA.ipv6.length, 25, 'IPv6 registry entries')
  for (const [block, name, , reachable] of IANA.ipv4) {
    for (const ip of samples(block, false)) {
      t.notOk(isPublicAddress(ip), `${ip} in ${block} (${name}${reachable ? ', globally reachable' : ''})`)
      t.type(callbackUrlProblem(`https://${ip}/hook`), 'string', `https://${ip}/hook`)
      const n = ip.split('.').map(Number)
      const hex = `${((n[0]! << 8) | n[1]!).toString(16)}:${((n[2]! << 8) | n[3]!).toString(16)}`
      for (const embedded of [`::ffff:${ip}`, `::ffff:${hex}`, `64:ff9b::${hex}`, `2002:${hex}::1`, `::${ip}`, `::ffff:0:${hex}`]) {
        t.notOk(isPublicAddress(embedded), `${embedded} embeds ${ip}`)
        t.type(callbackUrlProblem(`https://[${embedded}]/hook`), 'string', `https://[${embedded}]/hook`)
      }
    }
  }
  for (const [block, name, , reachable] of IANA.ipv6) {
    for (const ip of samples(block, true)) {
      t.notOk(isPublicAddress(ip), `${ip} in ${block} (${name}${reachable ? ', globally reachable' : ''})`)
      t.type(callbackUrlProblem(`https://[${ip}]/hook`), 'string', `https://[${ip}]/hook`)
    }
  }
  for (const ip of ['224.0.0.1', '239.255.255.255', 'ff02::1', 'ff0e::1']) t.notOk(isPublicAddress(ip), `${ip} (multicast)`)
  // Outside global unicast: reserved by the IETF, whatever the registries add to it later.
  for (const ip of ['4000::1', '8000::1', 'e000::1', '1::1', '::2', '200::1']) t.notOk(isPublicAddress(ip), `${ip} (not global unicast)`)
})

t.test('the forms that passed the old table are refused', async (t) => {
  for (const url of ['https://[fec0::1]/', 'https://[::ffff:0:7f00:1]/', 'https://[2001::1]/', 'https://[100::1]/', 'https://[3fff::1]/', 'https://[5f00::1]/', 'https://[2001:2::1]/', 'https://[64:ff9b::808:808]/']) {
    t.type(callbackUrlProblem(url), 'string', url)
  }
})

t.test('ordinary public addresses next to special blocks pass', async (t) => {
  for (const ip of ['8.8.8.8', '1.1.1.1', '192.0.1.1', '192.88.98.255', '198.20.0.1', '100.128.0.1', '11.0.0.1', '2001:4860:4860::8888', '2606:4700::1111', '2001:200::1', '2620:4f:8001::1', '3ffe:ffff::1', '2a00:1450:4001::1']) {
    t.ok(isPublicAddress(ip), ip)
    t.equal(callbackUrlProblem(ip.includes(':') ? `https://[${ip}]/hook` : `https://${ip}/hook`), undefined, ip)
  }
})
