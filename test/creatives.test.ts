import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { assetServer } from './helpers/asset-server.js'
import { adImage, adVideo } from './helpers/media.js'
import { startTestService, type TestService } from './helpers/service.js'

async function create (svc: TestService, key: string, body: Record<string, unknown>) {
  return svc.request('POST', '/openrtb/v2/creatives', { key, body })
}

async function moderated (svc: TestService, key: string, id: string) {
  await svc.service.moderator.idle()
  return (await svc.request('GET', `/openrtb/v2/creatives/${id}`, { key })).body.data
}

t.test('required fields, playable types, URL guard: the spec codes and nothing written', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('cr_errors')
  const before = svc.snapshot()
  const cases: Array<[Record<string, unknown>, number, string, string]> = [
    [{ content_type: 'image/png', creative_url: 'https://cdn.example.com/a.png' }, 400, 'missing_name', 'name'],
    [{ name: 'Ad', creative_url: 'https://cdn.example.com/a.png' }, 400, 'missing_content_type', 'content_type'],
    [{ name: 'Ad', content_type: 'image/png' }, 400, 'missing_asset_url', 'creative_url'],
    [{ name: 'Ad', content_type: 'application/pdf', creative_url: 'https://cdn.example.com/a.pdf' }, 422, 'unsupported_creative_type', 'content_type'],
    [{ name: 'Ad', content_type: 'image/png', creative_url: 'http://127.0.0.1/a.png' }, 400, 'invalid_parameter', 'creative_url'],
    [{ name: 'Ad', content_type: 'image/png', asset_url: 'https://169.254.169.254/latest' }, 400, 'invalid_parameter', 'asset_url'],
    [{ name: 'Ad', content_type: 'image/png', creative_url: 'ftp://cdn.example.com/a.png' }, 400, 'invalid_parameter', 'creative_url'],
    [{ name: 'Ad', content_type: 'image/png', creative_url: 'https://cdn.example.com/a.png', declared_categories: ['gambling'] }, 400, 'invalid_parameter', 'declared_categories.0']
  ]
  for (const [body, status, code, param] of cases) {
    const r = await create(svc, key, body)
    t.equal(r.status, status, code)
    t.match(r.body, { error_code: code, param })
  }
  t.same(svc.snapshot(), before, 'nothing written')
  const other = await svc.onboard('cr_other')
  const mine = await create(svc, key, { name: 'Mine', content_type: 'image/png', mode: 'upload' })
  const foreign = await svc.request('GET', `/openrtb/v2/creatives/${mine.body.data.creative_id}`, { key: other.key })
  t.equal(foreign.status, 404)
  t.equal(foreign.body.error_code, 'creative_not_found', 'another seat\'s creative is not found')
  t.equal((await svc.request('GET', '/openrtb/v2/creatives/cr_nope', { key })).body.error_code, 'creative_not_found')
})

t.test('presigned upload: PUT, confirm, moderation of a beer ad, and the completed event', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('cr_upload')
  const r = await create(svc, key, { name: 'Cold beer', content_type: 'image/png', mode: 'upload', advertiser_domain: 'Heineken.com' })
  t.equal(r.status, 201)
  const c = r.body.data
  t.match(c, { creative_id: /^cr_[0-9a-f]{32}$/, status: 'awaiting_upload', mode: 'upload', advertiser_domain: 'heineken.com', upload: { url: new RegExp(`^${svc.url}/uploads/`), method: 'PUT', headers: { 'Content-Type': 'image/png' }, expires_at: String, max_bytes: Number } })
  const path = new URL(c.upload.url).pathname
  const early = await svc.request('POST', `/openrtb/v2/creatives/${c.creative_id}/confirm`, { key })
  t.equal(early.status, 409, 'confirm before the upload')
  t.equal(early.body.error_code, 'invalid_transition')
  const png = await adImage('COLD BEER', 'Heineken happy hour')
  t.equal((await svc.request('PUT', path, { raw: png.toString('latin1'), headers: { 'content-type': 'image/jpeg' } })).status, 415, 'the declared content type is part of the signature')
  const tampered = path.replace(/.$/, (ch) => (ch === 'A' ? 'B' : 'A'))
  const forged = await svc.request('PUT', tampered, { raw: 'x', headers: { 'content-type': 'image/png' } })
  t.equal(forged.status, 403)
  t.equal(forged.body.error_code, 'not_authorized')
  const put = await fetch(svc.url + path, { method: 'PUT', headers: { 'content-type': 'image/png' }, body: png })
  t.equal(put.status, 200)
  t.match(await put.json(), { data: { creative_id: c.creative_id, bytes: png.length, sha256: /^[0-9a-f]{64}$/ } })
  const confirmed = await svc.request('POST', `/openrtb/v2/creatives/${c.creative_id}/confirm`, { key })
  t.equal(confirmed.status, 200)
  t.equal(confirmed.body.data.status, 'pending_moderation')
  t.notOk('upload' in confirmed.body.data)
  const done = await moderated(svc, key, c.creative_id)
  t.match(done, {
    status: 'approved',
    asset: { media_type: 'image/png', width: 1280, height: 720, bytes: png.length },
    moderation: { decision: 'approved', flags: { alcohol: true, gambling: false, adult_content: false, profanity: false }, age_rating: 'PG-13', brands: ['heineken'], iab_categories: [{ id: 'IAB8-5', name: 'Cocktails/Beer' }], content_analysis: { text: /COLD BEER/, keywords: Array, quality: { resolution: 'hd' } }, confidence: Number, frames_analyzed: 1 },
    moderated_at: String
  })
  t.ok(done.moderation.duration_ms > 0, `moderated in ${done.moderation.duration_ms} ms`)
  const events = svc.service.outbox.read('test', 100).filter((e) => e.type === 'creative.moderation.completed')
  t.match(events, [{ seat_id: 'cr_upload', subject: `creative:${c.creative_id}`, data: { creative_id: c.creative_id, status: 'approved', iab_categories: ['IAB8-5'] } }])
  t.equal((await svc.request('POST', `/openrtb/v2/creatives/${c.creative_id}/confirm`, { key })).status, 409, 'confirming twice')
  t.equal((await fetch(svc.url + path, { method: 'PUT', headers: { 'content-type': 'image/png' }, body: png })).status, 409, 'the upload is closed after confirm')
})

t.test('an upload over MAX_CREATIVE_BYTES is 413 and stores nothing', async (t) => {
  const svc = await startTestService(t, { MAX_CREATIVE_BYTES: '2048' })
  const { key } = await svc.onboard('cr_size')
  const c = (await create(svc, key, { name: 'Huge', content_type: 'image/png', mode: 'upload' })).body.data
  t.equal(c.upload.max_bytes, 2048)
  const big = await fetch(c.upload.url, { method: 'PUT', headers: { 'content-type': 'image/png' }, body: Buffer.alloc(5000, 7) })
  t.equal(big.status, 413)
  t.equal(((await big.json()) as { error_code: string }).error_code, 'payload_too_large')
  t.equal((await svc.request('POST', `/openrtb/v2/creatives/${c.creative_id}/confirm`, { key })).status, 409, 'nothing was uploaded')
})

t.test('an upload URL expires', async (t) => {
  const svc = await startTestService(t, { UPLOAD_URL_TTL_SECONDS: '60' })
  const { key } = await svc.onboard('cr_expiry')
  const c = (await create(svc, key, { name: 'Late', content_type: 'image/png', mode: 'upload' })).body.data
  svc.clock.advance(61_000)
  const late = await svc.request('PUT', new URL(c.upload.url).pathname, { raw: 'png', headers: { 'content-type': 'image/png' } })
  t.equal(late.status, 410)
  t.equal(late.body.error_code, 'expired')
  const confirm = await svc.request('POST', `/openrtb/v2/creatives/${c.creative_id}/confirm`, { key })
  t.equal(confirm.status, 410)
  t.equal(confirm.body.error_code, 'expired')
})

t.test('URL mode: fetched and moderated; failures reject with the reason', async (t) => {
  const svc = await startTestService(t, { ALLOW_PRIVATE_ASSET_URLS: 'true', MAX_CREATIVE_BYTES: '300000', CREATIVE_FETCH_TIMEOUT_MS: '500' })
  const { key } = await svc.onboard('cr_url')
  const slow = createServer(() => { /* never answers */ })
  await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r))
  t.teardown(() => { slow.closeAllConnections(); return new Promise((r) => slow.close(r)) })
  const slowUrl = `http://127.0.0.1:${(slow.address() as { port: number }).port}/slow.png`
  const base = await assetServer(t, {
    '/casino.png': { body: await adImage('CASINO NIGHT', 'Poker and blackjack', '#402'), type: 'image/png' },
    '/vote.png': { body: await adImage('VOTE SMITH', 'for Senate', '#333'), type: 'image/png' },
    '/big.png': { body: Buffer.alloc(400_000, 1), type: 'image/png' },
    '/moved.png': { body: Buffer.alloc(0), type: 'text/plain', status: 302, location: '/casino.png' },
    '/text.png': { body: Buffer.from('not an image at all'), type: 'image/png' },
    '/video.png': { body: await adImage('NOT A VIDEO', 'just a card'), type: 'video/mp4' }
  })
  const made: Record<string, string> = {}
  for (const name of ['casino', 'vote', 'big', 'moved', 'text', 'missing', 'slow', 'video']) {
    const url = name === 'slow' ? slowUrl : `${base}/${name}.png`
    const r = await create(svc, key, { name, content_type: name === 'video' ? 'video/mp4' : 'image/png', creative_url: url })
    t.equal(r.status, 201)
    t.equal(r.body.data.status, 'pending_moderation', 'answered at once, moderated later')
    made[name] = r.body.data.creative_id
  }
  await svc.service.moderator.idle()
  const get = async (name: string) => (await svc.request('GET', `/openrtb/v2/creatives/${made[name]}`, { key })).body.data
  t.match(await get('casino'), { status: 'approved', moderation: { flags: { gambling: true }, iab_categories: [{ id: 'IAB9-7' }] } })
  t.match(await get('vote'), { status: 'needs_review', moderation: { reasons: ['political content'], flags: { political: true } } })
  t.match(await get('big'), { status: 'rejected', failure: /exceeds 300000 bytes|limit is 300000/ })
  t.match(await get('moved'), { status: 'rejected', failure: /redirects/ })
  t.match(await get('text'), { status: 'rejected', failure: /not a readable image or video/ })
  t.match(await get('missing'), { status: 'rejected', failure: /HTTP 404/ })
  t.match(await get('slow'), { status: 'rejected', failure: /longer than 500 ms/ })
  t.match(await get('video'), { status: 'rejected', failure: /is image\/png, not the declared video\/mp4/ }, 'the probed type must match the declared one')
  const list = await svc.request('GET', '/openrtb/v2/creatives?status=rejected&limit=2', { key })
  t.equal(list.body.data.creatives.length, 2)
  const all = await svc.request('GET', '/openrtb/v2/creatives?status=rejected', { key })
  t.equal(all.body.data.creatives.length, 6)
  const next = await svc.request('GET', `/openrtb/v2/creatives?status=rejected&limit=4&cursor=${list.body.data.cursor.next}`, { key })
  t.equal(next.body.data.creatives.length, 4)
  t.equal(new Set([...list.body.data.creatives, ...next.body.data.creatives].map((c: { creative_id: string }) => c.creative_id)).size, 6, 'the six rejected, without duplicates')
  t.equal((await svc.request('GET', '/openrtb/v2/creatives?status=pending', { key })).body.data.creatives.length, 0, 'pending is an alias of pending_moderation')
})

t.test('the SSRF guard runs again at connect time, on the resolved address', async (t) => {
  const { fetchAsset } = await import('../src/moderation/fetch-asset.js')
  const base = await assetServer(t, { '/a.png': { body: await adImage('HELLO', 'world'), type: 'image/png' } })
  const port = new URL(base).port
  // A host name that passes the syntactic check but resolves to loopback, as a rebinding name would.
  await t.rejects(fetchAsset(`http://localhost:${port}/a.png`, { maxBytes: 1e6, timeoutMs: 2000, allowPrivate: false }), /resolves to (127\.0\.0\.1|::1), which is not a public address/)
  const allowed = await fetchAsset(`http://localhost:${port}/a.png`, { maxBytes: 1e6, timeoutMs: 2000, allowPrivate: true })
  t.ok(allowed.bytes.length > 1000, 'the test escape hatch lets it through')
  await t.rejects(fetchAsset(`http://localhost:${port}/a.png`, { maxBytes: 100, timeoutMs: 2000, allowPrivate: true }), /exceeds 100 bytes|limit is 100/)
})

t.test('a 15-second video: frames sampled, text read, classified', async (t) => {
  const svc = await startTestService(t)
  const { key } = await svc.onboard('cr_video')
  const dir = mkdtempSync(join(tmpdir(), 'oohbid-video-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  writeFileSync(join(dir, 'card.png'), await adImage('SPRING SALE', 'Nike shoes 30% off', '#248'))
  await adVideo(join(dir, 'card.png'), join(dir, 'ad.mp4'), 15)
  const c = (await create(svc, key, { name: 'Spring video', content_type: 'video/mp4', mode: 'upload' })).body.data
  await fetch(c.upload.url, { method: 'PUT', headers: { 'content-type': 'video/mp4' }, body: readFileSync(join(dir, 'ad.mp4')) })
  await svc.request('POST', `/openrtb/v2/creatives/${c.creative_id}/confirm`, { key })
  const done = await moderated(svc, key, c.creative_id)
  t.match(done, { status: 'approved', asset: { media_type: 'video/mp4', width: 1280, height: 720, duration_seconds: 15 }, moderation: { frames_analyzed: 5, brands: ['nike'], content_analysis: { setting: 'motion video', text: /SPRING SALE/ } } })
  t.ok(done.moderation.iab_categories.some((x: { id: string }) => x.id === 'IAB18-5'), 'shoes and Nike: clothing')
  t.comment(`15 s video moderated in ${done.moderation.duration_ms} ms`)
})

t.test('operators review: needs_review and rejected creatives move with a reason, audited and announced', async (t) => {
  const svc = await startTestService(t, { ALLOW_PRIVATE_ASSET_URLS: 'true' })
  const { key } = await svc.onboard('cr_review')
  const base = await assetServer(t, { '/vote.png': { body: await adImage('VOTE SMITH', 'for Senate', '#333'), type: 'image/png' } })
  const c = (await create(svc, key, { name: 'Vote', content_type: 'image/png', creative_url: `${base}/vote.png` })).body.data
  const broken = (await create(svc, key, { name: 'Broken', content_type: 'image/png', creative_url: `${base}/missing.png` })).body.data
  await svc.service.moderator.idle()
  const queue = await svc.admin('GET', '/admin/v1/creatives')
  t.match(queue.body.data.creatives, [{ creative_id: c.creative_id, status: 'needs_review', seat_id: 'cr_review' }])
  const bad = await svc.admin('POST', `/admin/v1/creatives/${c.creative_id}/review`, { decision: 'approved' })
  t.equal(bad.status, 400)
  t.equal(bad.body.param, 'reason')
  const approved = await svc.admin('POST', `/admin/v1/creatives/${c.creative_id}/review`, { decision: 'approved', reason: 'Registered political advertiser, disclosure present' })
  t.match(approved.body.data, { status: 'approved', reviews: [{ decision: 'approved', from: 'needs_review', reason: /disclosure/ }] })
  t.equal((await svc.admin('POST', `/admin/v1/creatives/${c.creative_id}/review`, { decision: 'rejected', reason: 'changed my mind' })).status, 409, 'an approved creative is not reviewed again')
  const appeal = await svc.admin('POST', `/admin/v1/creatives/${broken.creative_id}/review`, { decision: 'approved', reason: 'asset re-hosted and checked by hand' })
  t.equal(appeal.body.data.status, 'approved', 'a rejected creative can be approved on appeal')
  t.equal((await svc.admin('POST', '/admin/v1/creatives/cr_nope/review', { decision: 'approved', reason: 'n/a' })).body.error_code, 'creative_not_found')
  const events = svc.service.outbox.read('test', 100).filter((e) => e.type === 'creative.moderation.completed' && e.subject === `creative:${c.creative_id}`)
  t.match(events.map((e) => e.data), [{ status: 'needs_review', reviewed: false }, { status: 'approved', reviewed: true }])
  const audit = await svc.admin('GET', `/admin/v1/audit?subject=creative:${c.creative_id}`)
  t.match(audit.body.data.events, [{ type: 'audit.creative.reviewed', reason: /disclosure/ }])
})
