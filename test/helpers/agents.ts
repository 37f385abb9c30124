import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { deviceBody, registerDevices, registerPartner, sendAudience } from './fleet.js'
import type { TestService } from './service.js'

// AI buying agents over MCP (POST /mcp, AdCP media buy), as an agent reaches them: JSON-RPC over real HTTP, and the
// official AdCP conformance runner (@adcp/client's `adcp test`) driving the same endpoint. test/agents-*.test.ts
// use these, a file per tool family.

export const run = promisify(execFile)
/** What a streamable-HTTP MCP client accepts. */
export const ACCEPT = 'application/json, text/event-stream'
export const DAY = 86_400_000
/** Monday, November 30th 2026, 09:00 in Austin (15:00 UTC): the gyms are open. Tests that play start their clock here. */
export const MONDAY_9AM_AUSTIN = Date.UTC(2026, 10, 30, 15, 0, 0)
export const HOUR = 3_600_000

export async function rpc (svc: TestService, key: string | undefined, message: unknown, headers: Record<string, string> = {}, query = '') {
  return await svc.request('POST', `/mcp${query}`, { ...(key !== undefined ? { key } : {}), headers: { accept: ACCEPT, ...headers }, raw: JSON.stringify(message) })
}

let ids = 0
/** Calls a tool; its answer (structuredContent) and whether it is a refusal. */
export async function tool (svc: TestService, key: string, name: string, args: Record<string, unknown>, headers: Record<string, string> = {}, query = '') {
  const r = await rpc(svc, key, { jsonrpc: '2.0', id: ++ids, method: 'tools/call', params: { name, arguments: args } }, headers, query)
  if (r.status !== 200 || r.body.result === undefined) throw new Error(`${name}: ${r.status} ${r.text}`)
  return { data: r.body.result.structuredContent, error: r.body.result.isError === true }
}

/** The official runner's report for one scenario. */
export async function conformance (svc: TestService, key: string, scenario: string, extra: string[] = []) {
  const { stdout } = await run(process.execPath, ['node_modules/@adcp/client/bin/adcp.js', 'test', `${svc.url}/mcp`, scenario, '--protocol', 'mcp', '--auth', key, '--json', ...extra], { timeout: 120_000 }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }))
  return JSON.parse(stdout.slice(stdout.indexOf('{'))) as { overall_passed: boolean, summary: string, steps: Array<{ step: string, passed: boolean, error?: string, created_id?: string }> }
}

/** Austin gyms with a live audience (8 people per play) and floors of $9-$14, a Dallas gym and an Austin airport. */
export async function market (svc: TestService) {
  const partner = await registerPartner(svc)
  const screens = await registerDevices(svc, partner, [
    ...[1, 2, 3, 4, 5, 6].map((i) => deviceBody(`gym-${i}`, { floor_price_cpm: 8 + i })),
    deviceBody('gym-dallas', { location: { city: 'Dallas', lat: 32.7767, lng: -96.797 }, floor_price_cpm: 6 }),
    deviceBody('airport-1', { location: { venue_type: 'airport' }, floor_price_cpm: 12 })
  ])
  await sendAudience(svc, partner, [1, 2, 3, 4, 5, 6].map((i) => ({ device_id: `gym-${i}`, live_face_count: 8, attention_score: 0.6 })))
  const devices = (await svc.request('GET', '/v1/partner/devices', { key: partner.key })).body.data.devices as Array<{ device_id: string, screen_id: string, embed_url: string }>
  const embedOf = (screenId: string) => new URL(devices.find((d) => d.screen_id === screenId)!.embed_url).pathname
  return { partner, screens, embedOf }
}

/** The product of the Austin gyms sold one way (guaranteed, preferred or auction). */
export async function gymProduct (svc: TestService, key: string, sale: string): Promise<string> {
  return ((await tool(svc, key, 'get_products', { brief: 'gyms in Austin' })).data.products as Array<{ product_id: string }>).find((p) => p.product_id.endsWith(`:${sale}`))!.product_id
}

/**
 * Approves the seat's synced creatives (all, or those the buyer's creative_ids name) as an operator would once
 * moderation, unable to fetch the test assets, turned them down; then the jobs activate their packages. Answers their
 * platform ids, in list_creatives' order.
 */
export async function approveSynced (svc: TestService, key: string, creativeIds?: string[]): Promise<string[]> {
  await svc.service.moderator.idle()
  const listed = (await tool(svc, key, 'list_creatives', {})).data.creatives as Array<{ creative_id: string, ext: { oohbid: { platform_id: string } } }>
  const ids = listed.filter((c) => creativeIds === undefined || creativeIds.includes(c.creative_id)).map((c) => c.ext.oohbid.platform_id)
  for (const id of ids) await svc.admin('POST', `/admin/v1/creatives/${id}/review`, { decision: 'approved', reason: 'checked for the test' })
  await svc.service.runJobs()
  return ids
}

/** A spot decided at a screen (by its embed path), played to its end when it is not the house creative. */
export async function playSpot (svc: TestService, embed: string) {
  const spot = (await svc.request('POST', `${embed}/spots`, { body: {} })).body.data
  if (spot.tier !== 'house') {
    await svc.request('POST', `${embed}/spots/${spot.spot_id as string}/events`, { body: { event: 'render_started' } })
    await svc.request('POST', `${embed}/spots/${spot.spot_id as string}/events`, { body: { event: 'play_completed', duration_ms: 15_000 } })
  }
  return spot
}
