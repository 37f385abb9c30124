import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { eventually } from './helpers/eventually.js'
import { startProcess } from './helpers/process.js'

// `npm start` as a new user runs it, with a small demo (DEMO_FLEET=40) and nothing else done: within a minute the
// market moves by itself. Screens' players are given spots and play them, plays are proven, the demo buyer's bids win
// auctions, and its report shows the impressions. stderr carries JSON log lines only.

t.test('after npm start, within 60 s: spots played, proofs issued, the demo buyer winning, its report showing impressions', async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), 'oohbid-demo-'))
  const svc = await startProcess(dataDir, { DEMO_FLEET: '40', LOG_LEVEL: 'info' })
  t.teardown(async () => {
    svc.child.kill('SIGTERM')
    await new Promise((resolve) => svc.child.once('exit', resolve))
  })
  const get = async (path: string, key?: string) => {
    const res = await fetch(svc.url + path, { headers: key !== undefined ? { authorization: `Bearer ${key}` } : {} })
    return { status: res.status, text: await res.text() }
  }
  const json = async (path: string, key: string) => JSON.parse((await get(path, key)).text).data
  const started = Date.now()
  const state = join(dataDir, 'demo-buyer.json')
  let key: string | undefined
  const seen = await eventually(t, 'plays, wins and proofs in the demo market, within the minute the README promises', async () => {
    key ??= existsSync(state) ? JSON.parse(readFileSync(state, 'utf8')).key as string | undefined : undefined
    const metrics = (await get('/metrics')).text
    const plays = [...metrics.matchAll(/^oohbid_http_requests_total\{method="POST",route="\/embed\/:token\/spots\/:spot_id\/events",status="200"\} (\d+)/gm)].reduce((n, m) => n + Number(m[1]), 0)
    if (key === undefined) return { plays, wins: 0, proofs: 0 }
    return { plays, wins: (await json('/openrtb/v2/stats', key)).wins as number, proofs: (await json('/v1/advertiser/proof/proofs?limit=100', key)).proofs.length as number }
  }, { within: 60_000, every: 1000, until: (s) => s.plays > 0 && s.wins > 0 && s.proofs > 0 })
  t.ok(seen.plays > 0, `the screens' players reported plays (${seen.plays} events)`)
  t.ok(key !== undefined, 'the demo buyer onboarded')
  t.ok(seen.wins > 0, `the demo buyer won auctions (${seen.wins})`)
  t.ok(seen.proofs > 0, `its plays were proven (${seen.proofs} proofs)`)
  t.comment(`the market moved ${Math.round((Date.now() - started) / 1000)} s after the start`)
  // The plays behind those proofs reach ClickHouse with the shipper's next batch (src/analytics/shipper.ts: at most
  // 30 s after they were logged): once it has shipped every event logged by now, a report asked counts them.
  const counter = (text: string, name: string) => Number(new RegExp(`^${name} (\\d+)`, 'm').exec(text)?.[1] ?? 0)
  const now = (await get('/metrics')).text
  const due = counter(now, 'oohbid_funnel_shipped_events_total') + counter(now, 'oohbid_funnel_pending_events')
  await eventually(t, `the ${due} funnel events logged by now shipped to ClickHouse`, async () => counter((await get('/metrics')).text, 'oohbid_funnel_shipped_events_total'), { within: 45_000, every: 500, until: (n) => n >= due })
  const summary = await get('/openrtb/v2/reports/summary', key)
  t.equal(summary.status, 200)
  t.ok(JSON.parse(summary.text).data.impressions > 0, 'GET /reports/summary shows the demo buyer\'s impressions')
  const dashboard = await fetch(`${svc.url}/admin/v1/dashboard`, { headers: { authorization: 'Bearer crash-admin' } }).then((r) => r.json()) as any
  const decided = Object.entries(dashboard.data.spots as Record<string, number>).filter(([tier]) => tier !== 'closed').reduce((n, [, v]) => n + v, 0)
  t.ok(decided > 0 && dashboard.data.bids.won > 0 && dashboard.data.top_screens.length > 0, `and the operator dashboard shows it (${decided} spots decided, ${dashboard.data.bids.won} won by bids)`)
  const lines = svc.stderr().split('\n').filter((l) => l !== '')
  t.same(lines.filter((l) => { try { JSON.parse(l); return false } catch { return true } }), [], 'every stderr line is JSON')
  t.notMatch(svc.stdout(), /NSFWJS|using the model/, 'stdout has the demo\'s progress lines, and no library\'s (nsfwjs speaks through the log)')
})
