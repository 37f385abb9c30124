import { VASTParser } from '@dailymotion/vast-client'
import { DOMParser } from '@xmldom/xmldom'
import { XMLValidator } from 'fast-xml-parser'
import t from 'tap'
import { displayOf, markup } from '../src/exchange/markup.js'
import type { CreativeRecord } from '../src/creatives/records.js'
import { approvedCreative } from './helpers/creatives.js'
import { deviceBody, registerDevices, registerPartner } from './helpers/fleet.js'
import { startTestService, type TestService } from './helpers/service.js'
import { vastXsdErrors } from './helpers/vast-xsd.js'

// The VAST feed as a VAST player sees it: the tag is well-formed VAST 4.2 that Dailymotion's VAST client (what web
// players use) parses into one linear ad, and calling its tracking URLs bills the spot and proves the play.

/** The parsed VAST and its raw text, after checking it is well-formed XML. */
async function parse (xml: string) {
  const valid = XMLValidator.validate(xml)
  if (valid !== true) throw new Error(`not well-formed XML: ${JSON.stringify(valid)}`)
  const doc = new DOMParser().parseFromString(xml, 'text/xml')
  return await new VASTParser().parseVAST(doc as never)
}

async function setup (svc: TestService, hours?: Record<string, string[][]>) {
  const p = await registerPartner(svc)
  const ids = await registerDevices(svc, p, [deviceBody('vast-1', { slot_duration_seconds: 15, ...(hours !== undefined ? { operating_hours: hours } : {}) })])
  const device = (await svc.request('GET', '/v1/partner/devices', { key: p.key })).body.data.devices[0] as { embed_url: string }
  const { key } = await svc.onboard('vaster')
  await svc.admin('POST', '/admin/v1/seats/vaster/approve')
  const creative = await approvedCreative(svc, key, 'vast ad')
  const req = (await svc.request('GET', '/openrtb/v2/adslots?format=openrtb&limit=1', { key })).body.data.bid_requests[0]
  await svc.request('POST', '/openrtb/v2/bid', { key, body: { id: req.id, seatbid: [{ bid: [{ id: 'b-vast', impid: req.imp[0].id, price: 8, crid: creative, adm: '<b>ad</b>' }] }] } })
  return { key, creative, screenId: ids['vast-1']!, embed: new URL(device.embed_url).pathname }
}

t.test('GET {embed_url}/vast: a VAST 4.2 InLine ad whose tracking URLs bill the spot and prove the play', async (t) => {
  const svc = await startTestService(t)
  const s = await setup(svc)
  const r = await svc.request('GET', `${s.embed}/vast`)
  t.equal(r.status, 200)
  t.match(r.headers.get('content-type'), /^application\/xml/)
  t.match(r.headers.get('cache-control'), /no-store/)
  t.same(await vastXsdErrors(r.text), [], 'valid against the IAB vast_4.2.xsd (xmllint)')
  t.match(r.text, /<MediaFile delivery="progressive" type="image\/png" width="1920" height="1080">/, 'an asset never measured takes the screen\'s size')
  const vast = await parse(r.text)
  t.equal(vast.version, '4.2')
  t.equal(vast.ads.length, 1)
  const ad = vast.ads[0]!
  t.match(ad, { system: { value: 'oohbid' }, title: 'vast ad', adServingId: /^spt_/ })
  const linear = ad.creatives.find((c: { type: string }) => c.type === 'linear') as any
  t.ok(linear, 'one linear creative')
  t.equal(linear.duration, 15, 'the slot duration')
  t.equal(linear.universalAdIds[0].value, s.creative)
  t.equal(linear.mediaFiles.length, 1)
  t.match(linear.mediaFiles[0], { deliveryType: 'progressive', mimeType: 'image/png', fileURL: new RegExp(`/embed/.+/assets/${s.creative}$`) })
  const tracking = linear.trackingEvents as Record<string, string[]>
  t.same(Object.keys(tracking).sort(), ['complete', 'firstQuartile', 'midpoint', 'start', 'thirdQuartile'])
  t.equal(ad.impressionURLTemplates.length, 1)
  t.match(ad.errorURLTemplates[0], /\/error\?code=\[ERRORCODE\]$/)

  const call = async (url: string) => (await svc.request('GET', new URL(url).pathname)).status
  t.equal(await call(ad.impressionURLTemplates[0]!.url), 204)
  t.equal(await call(tracking.start![0]!), 204)
  for (const q of ['firstQuartile', 'midpoint', 'thirdQuartile'] as const) t.equal(await call(tracking[q]![0]!), 204)
  svc.clock.advance(15_000)
  t.equal(await call(tracking.complete![0]!), 204)
  t.equal(await call(tracking.complete![0]!), 204, 'a repeated complete is harmless')

  const proofs = (await svc.request('GET', '/v1/advertiser/proof/proofs', { key: s.key })).body.data.proofs
  t.equal(proofs.length, 1, 'one proof, however often complete was called')
  t.match(proofs[0], { verification_tier: 'event_confirmed', impressionId: ad.adServingId, adId: s.creative, duration_ms: 15_000, givt: { passed: true } })
  const stats = (await svc.request('GET', '/openrtb/v2/stats', { key: s.key })).body.data
  t.match(stats, { wins: 1 })
  t.ok(stats.spend_usd > 0, 'the play was billed')
  t.ok(svc.service.outbox.read('test', 500).some((e) => e.type === 'impression.verified' && e.data.verification_tier === 'event_confirmed'), 'impression.verified for the VAST complete')
})

t.test('nothing to play: an empty VAST 4.2; bad tracking calls are refused', async (t) => {
  const svc = await startTestService(t)
  const p = await registerPartner(svc)
  await registerDevices(svc, p, [deviceBody('empty-1')])
  const device = (await svc.request('GET', '/v1/partner/devices', { key: p.key })).body.data.devices[0] as { embed_url: string }
  const embed = new URL(device.embed_url).pathname
  const r = await svc.request('GET', `${embed}/vast`)
  t.equal(r.status, 200)
  t.same(await vastXsdErrors(r.text), [], 'the empty VAST is valid against the IAB XSD too')
  const vast = await parse(r.text)
  t.equal(vast.ads.length, 0, 'no ad: the slate plays')
  t.match(await svc.request('GET', `${embed}/vast/spt_nope/start`), { status: 404, body: { error_code: 'spot_not_found' } })
  t.match(await svc.request('GET', `${embed}/vast/spt_nope/bounce`), { status: 400, body: { error_code: 'invalid_parameter' } })
  t.match(await svc.request('GET', '/embed/not-a-token/vast'), { status: 404, body: { error_code: 'screen_not_found' } })
  t.equal((await svc.request('GET', `${embed}/vast`)).status, 200, 'still serving')
})

t.test('the exchange bidder\'s VAST markup for video is valid against the IAB vast_4.2.xsd, measured or not', async (t) => {
  const video = { creative_id: 'cr_video', seat_id: 's', name: 'Spring <spot> & more', content_type: 'video/mp4', mode: 'url', status: 'approved', created_at: '', updated_at: '', moderated_at: null } as CreativeRecord
  const imp = { id: '1', video: { mimes: ['video/mp4'], w: 1080, h: 1920 } }
  const unmeasured = markup(video, 2, 'https://ads.example/assets/cr_video', 'bid-1', 'https://ads.example/bill?b=1&x=2', displayOf(imp))
  t.same(await vastXsdErrors(unmeasured), [])
  t.match(unmeasured, /width="1080" height="1920"/, 'never measured: the imp\'s player size')
  const measured = markup({ ...video, asset: { media_type: 'video/mp4', width: 1280, height: 720, duration_seconds: 10 } }, 2, 'https://ads.example/assets/cr_video', 'bid-2', 'https://ads.example/bill', displayOf({ id: '1' }))
  t.same(await vastXsdErrors(measured), [])
  t.match(measured, /width="1280" height="720"/)
  t.not((await vastXsdErrors(measured.replace('<AdTitle>', '<AdTitle>x</AdTitle><AdTitle>'))).length, 0, 'and the check is real: a second AdTitle fails it')
})
