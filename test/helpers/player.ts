import type { Page } from 'playwright-core'
import { startBrowser } from './browser.js'
import { deviceBody, registerDevices, registerPartner } from './fleet.js'
import type { startTestService, TestService } from './service.js'

/** The slot the player tests' screens play, and how soon their players pick up a new assignment. */
export const SLOT_SECONDS = 5
export const PICKUP_SECONDS = 5

export interface PlayerEvent { name: string, detail: any, at: number }

/** Records the page's service:* events from its first script on. */
export const RECORD = `window.__events = [];
for (const name of ['service:ad_started', 'service:ad_ended', 'service:overlay_clicked']) addEventListener(name, (e) => window.__events.push({ name, detail: e.detail, at: Date.now() }))`

/** A screen with a player page open on it. */
export async function screenWithPlayer (t: Parameters<typeof startTestService>[0], svc: TestService, fp = 'device-fp-1', settings: Record<string, unknown> = {}) {
  const partner = await registerPartner(svc)
  const [screenId] = Object.values(await registerDevices(svc, partner, [deviceBody('player-1', { slot_duration_seconds: SLOT_SECONDS, ...settings })]))
  const device = (await svc.request('GET', '/v1/partner/devices', { key: partner.key })).body.data.devices[0]
  const browser = await startBrowser(t)
  const page: Page = await browser.newPage({ viewport: { width: 960, height: 540 } })
  await page.addInitScript(RECORD)
  const response = await page.goto(`${device.embed_url}?fp=${fp}`)
  const events = () => page.evaluate(() => (globalThis as any).__events) as Promise<PlayerEvent[]>
  const status = () => page.evaluate(() => (globalThis as any).oohbid.status())
  return { partner, screenId: screenId!, device, browser, page, response, events, status }
}
