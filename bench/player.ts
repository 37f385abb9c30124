// Benchmark: the player page's weight and its time to first frame (navigation start to the creative decoded on
// screen) in headless Chromium, cold each time (a new browser context: no cache), against a bare uWS page that shows
// the same image with one <img>, in the same run.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium } from 'playwright-core'
import { chromiumLaunchOptions } from '../test/helpers/chromium.js'
import { adImage } from '../test/helpers/media.js'
import { startBaseline, startOohbid } from './lib/processes.js'
import { benchCreative, benchScreen, jsonClient } from './lib/fixtures.js'
import { saveTable, type Bar } from './lib/report.js'
import { benchSeat } from './lib/seat.js'

const loads = Number(process.env.BENCH_LOADS ?? 20)
const dir = mkdtempSync(join(tmpdir(), 'oohbid-player-bench-'))
const png = await adImage('SPRING SALE', 'Running shoes 30% off', '#248')
writeFileSync(join(dir, 'a.png'), png)
const bare = await startBaseline('bare-page', { BARE_IMAGE_FILE: join(dir, 'a.png') })
const oohbid = await startOohbid({ PICKUP_SECONDS: '1' })
const call = jsonClient(oohbid.url)

// A screen with a creative assigned, so that the first spot the page asks for plays it.
const { screenId, embedUrl } = await benchScreen(call)
const key = await benchSeat(oohbid.url, oohbid.adminToken, 'bench_player', ['creatives', 'campaigns'])
const creativeId = await benchCreative(call, key, oohbid.adminToken, { png })
const today = new Date().toISOString().slice(0, 10)
const assigned = await call('/openrtb/v2/campaigns/assign', { method: 'POST', key, body: { creative_id: creativeId, screen_ids: [screenId], start_date: today, end_date: today, spots_per_day: 2000 } })
if (assigned.assignment_id === undefined) throw new Error(`assignment refused: ${JSON.stringify(assigned)}`)
await new Promise((r) => setTimeout(r, 1500))

const browser = await chromium.launch(await chromiumLaunchOptions())
/** Loads a page `loads` times, each in a fresh context; the first-frame times (ms) and the page's bytes. */
async function measure (url: string, firstFrame: () => unknown): Promise<{ times: number[], bytes: number }> {
  const times: number[] = []
  let bytes = 0
  for (let i = 0; i < loads; i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 720 } })
    const page = await context.newPage()
    const response = await page.goto(url)
    bytes = (await response!.body()).length
    try {
      times.push(await page.waitForFunction(firstFrame, undefined, { timeout: 15_000 }).then((h) => h.jsonValue() as Promise<number>))
    } catch (err) {
      const state = await page.evaluate(() => (globalThis as any).oohbid?.status()).catch(() => undefined)
      throw new Error(`${url}: no first frame in 15 s (player status ${JSON.stringify(state)})`, { cause: err })
    }
    await context.close()
    if (process.stdout.isTTY) process.stdout.write(`\r${url.slice(0, 40)}... ${i + 1}/${loads}`)
  }
  if (process.stdout.isTTY) process.stdout.write('\n')
  return { times: times.sort((a, b) => a - b), bytes }
}
// The player's CSP allows no eval: the probes are functions, not strings.
let base: { times: number[], bytes: number }
let ours: { times: number[], bytes: number }
try {
  base = await measure(`${bare.url}/`, () => (globalThis as any).firstFrame)
  ours = await measure(`${embedUrl}?fp=bench-device`, () => (globalThis as any).oohbid?.status().first_frame_ms)
} finally {
  await browser.close()
  await Promise.all([bare.stop(), oohbid.stop()])
  rmSync(dir, { recursive: true, force: true })
}

const at = (xs: number[], q: number) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))]!
const row = (target: string, m: { times: number[], bytes: number }, requests: string) => ({ target, 'page bytes': m.bytes, 'requests before the first frame': requests, 'first frame p50 ms': at(m.times, 0.5), 'first frame p95 ms': at(m.times, 0.95), 'vs bare (p50)': `${(at(m.times, 0.5) / at(base.times, 0.5)).toFixed(2)}x` })
const rows = [row('bare uWS page with one <img> (baseline)', base, 'page, image'), row('oohbid player page', ours, 'page, heartbeat, spot, image')]
const bars: Bar[] = rows.map((r) => ({ label: r.target, value: Number(r['first frame p50 ms']), text: `${r['first frame p50 ms']} ms (${r['page bytes'].toLocaleString('en-US')} B page)`, baseline: r.target.startsWith('bare') }))
saveTable('player', `Player page: weight and time to first frame, headless Chromium, ${loads} cold loads each (loopback)`, rows,
  'First frame: from navigation start until the creative is decoded and on screen. The player asks the feed for its spot (the waterfall runs) and fetches the asset before showing it; the baseline page knows its image in advance.',
  { player: { title: 'Player page: time to first frame (p50, cold load)', bars } })
