import { iso } from '../../clock.js'
import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { AudienceBatchRequest, AudienceUpdate, BatchResult, Device, DeviceBatchRequest, DeviceRegisterRequest, HeartbeatBatchRequest, HeartbeatItem, HeartbeatRequest, PartnerListQuery } from '../../generated/types.js'
import { itemError } from '../../http/envelope.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import { validate } from '../../http/validate.js'
import { partnerRecord, type Inventory } from '../inventory.js'
import type { PartnerRecord, ScreenRecord } from '../records.js'

const MAX_AGE_MS = 10 * 60_000
const MAX_SKEW_MS = 5_000

/** A device as its partner sees it. */
export function deviceView (inventory: Inventory, s: ScreenRecord): Device {
  const status = inventory.statusOf(s.screen_id)
  const location = { ...s.location } as Device['location']
  return {
    device_id: s.device_id,
    screen_id: s.screen_id,
    device_type: s.device_type,
    name: s.name,
    display: s.display,
    location,
    capabilities: s.capabilities,
    embed_url: inventory.embedUrl(s),
    player_bound: inventory.playerOf(s.screen_id) !== undefined,
    status: inventory.statusName(status),
    last_heartbeat_at: status.last_heartbeat !== null ? iso(status.last_heartbeat) : null,
    created_at: s.created_at,
    updated_at: s.updated_at
  }
}

/** The partner's screens in device_id order, after a cursor, optionally by status. */
export function partnerScreens (inventory: Inventory, partner: PartnerRecord, q: PartnerListQuery): { screens: ScreenRecord[], next: string | null } {
  const after = q.cursor !== undefined ? Buffer.from(q.cursor, 'base64url').toString() : undefined
  const start = `${partner.id}\u0000${after ?? ''}`
  const screens: ScreenRecord[] = []
  let last: string | undefined
  for (const { key, value } of inventory.store.devices.getRange({ start, end: `${partner.id}\u0001` })) {
    const deviceId = key.slice(partner.id.length + 1)
    if (after !== undefined && deviceId <= after) continue
    const screen = inventory.store.screens.get(value)
    if (screen === undefined) continue
    if (q.status !== undefined && inventory.statusName(inventory.statusOf(screen.screen_id)) !== q.status) continue
    if (screens.length === (q.limit ?? 100)) return { screens, next: Buffer.from(last!).toString('base64url') }
    screens.push(screen)
    last = deviceId
  }
  return { screens, next: null }
}

type ItemResult = BatchResult['results'][number]

/**
 * Judges each item of a batch alone: an item whose handling throws an ApiError is reported with the error a single
 * call would give (nested code), the others are accepted. Anything else is a bug and fails the whole batch.
 */
function judgeEach (items: unknown[], handle: (item: unknown) => Omit<ItemResult, 'index'>): BatchResult {
  const result: BatchResult = { accepted: 0, rejected: 0, results: [] }
  items.forEach((item, index) => {
    try {
      result.results.push({ index, ...handle(item) })
      result.accepted++
    } catch (err) {
      if (!(err instanceof ApiError)) throw err
      const deviceId = (item as { device_id?: unknown } | null)?.device_id
      result.results.push({ index, ...(typeof deviceId === 'string' ? { device_id: deviceId } : {}), status: 'rejected', error: itemError(err) })
      result.rejected++
    }
  })
  return result
}

/** When a measurement was taken: measured_at if plausible, else now. */
function measuredAt (u: AudienceUpdate, now: number): number {
  if (u.measured_at === undefined) return now
  const at = Date.parse(u.measured_at)
  if (at > now + MAX_SKEW_MS) throw new ApiError('invalid_date', 'measured_at is in the future.', { param: 'measured_at' })
  if (at < now - MAX_AGE_MS) throw new ApiError('invalid_date', 'measured_at is more than 10 minutes old; live signals that old are not live.', { param: 'measured_at' })
  return at
}

/**
 * The partner device API (spec, Partner device API): registration (one or a batch), the device list, heartbeats and
 * batched FEIN audience updates. Batches are judged item by item and commit in one transaction.
 */
export function deviceRoutes ({ inventory }: Deps): RouteDef[] {
  const common = { tag: 'Partner', envelope: 'nested', auth: 'partner', rateGroup: 'partner' } as const
  // A registration reads the screen it updates, and a new one its device's free slot: one writer a partner at a time
  // on a cluster, the same record the operator's change of the partner's source rewrites its screens under.
  const registration = { ...common, exclusive: (ctx: { principal?: { partner?: PartnerRecord } | undefined }) => partnerRecord(ctx.principal!.partner!.id) }
  const device = (partner: PartnerRecord, deviceId: string): ScreenRecord => {
    const screen = inventory.screenOfDevice(partner.id, deviceId)
    if (screen === undefined) throw new ApiError('device_not_found', `No device ${deviceId} is registered by this partner.`, { param: 'device_id' })
    return screen
  }
  return [
    route<DeviceRegisterRequest>({
      ...registration,
      method: 'post',
      path: '/v1/partner/device',
      summary: 'Register a device (or update it: device_id is the upsert key)',
      description: 'Answers 201 with data.embed_url for a new device, 200 for an update. Country, state and city are filled from the coordinates when not given (offline GeoNames data). The screen joins adslots at once, in data quality none until the device sends audience data.',
      body: 'DeviceRegisterRequest',
      data: 'Device',
      status: 201,
      errors: ['invalid_parameter'],
      handler: (ctx) => {
        const { screen, created } = inventory.upsertDevice(ctx.principal!.partner!, ctx.body, ctx.now)
        return ok(deviceView(inventory, screen), created ? 201 : 200)
      }
    }),
    route<DeviceBatchRequest>({
      ...registration,
      method: 'post',
      path: '/v1/partner/devices/batch',
      summary: 'Register or update up to 1000 devices',
      description: 'Each item is a DeviceRegisterRequest, judged alone: the result lists created, updated and rejected items (with the error a single registration would give). Accepted items commit together.',
      body: 'DeviceBatchRequest',
      data: 'BatchResult',
      handler: (ctx) => ok(judgeEach(ctx.body.devices, (item) => {
        validate('DeviceRegisterRequest', item)
        const { screen, created } = inventory.upsertDevice(ctx.principal!.partner!, item as DeviceRegisterRequest, ctx.now)
        return { device_id: screen.device_id, screen_id: screen.screen_id, status: created ? 'created' : 'updated', embed_url: inventory.embedUrl(screen) }
      }))
    }),
    route<undefined, PartnerListQuery>({
      ...common,
      method: 'get',
      path: '/v1/partner/devices',
      summary: 'List the partner\'s devices',
      querySchema: 'PartnerListQuery',
      data: 'DeviceList',
      handler: (ctx) => {
        const { screens, next } = partnerScreens(inventory, ctx.principal!.partner!, ctx.q)
        return ok({ devices: screens.map((s) => deviceView(inventory, s)), cursor: { next, has_more: next !== null } })
      }
    }),
    route<HeartbeatRequest>({
      ...common,
      method: 'post',
      path: '/v1/partner/devices/:device_id/heartbeat',
      summary: 'One device\'s heartbeat',
      description: `A screen with no heartbeat for HEARTBEAT_TIMEOUT_SECONDS goes offline (event screen.offline); the next heartbeat brings it back (screen.online).`,
      body: 'HeartbeatRequest',
      data: 'Device',
      errors: ['device_not_found'],
      handler: (ctx) => {
        const screen = device(ctx.principal!.partner!, ctx.params.device_id!)
        inventory.heartbeat(screen, ctx.now)
        return ok(deviceView(inventory, screen))
      }
    }),
    route({
      ...common,
      method: 'delete',
      path: '/v1/partner/devices/:device_id/player',
      summary: 'Releases the device\'s player binding',
      description: 'The player page binds to the fp it is first opened with; after a device is replaced, release the binding and the next page opened binds again.',
      data: 'Device',
      errors: ['device_not_found'],
      handler: (ctx) => {
        const screen = device(ctx.principal!.partner!, ctx.params.device_id!)
        inventory.releasePlayer(screen)
        return ok(deviceView(inventory, screen))
      }
    }),
    route<HeartbeatBatchRequest>({
      ...common,
      method: 'post',
      path: '/v1/partner/heartbeats',
      summary: 'Heartbeats of up to 1000 devices',
      description: 'Each item is a HeartbeatItem, judged alone: a refused item (an unknown or malformed device_id) carries the error a single heartbeat would give, and the others are accepted.',
      body: 'HeartbeatBatchRequest',
      data: 'BatchResult',
      handler: (ctx) => ok(judgeEach(ctx.body.heartbeats, (item) => {
        validate('HeartbeatItem', item)
        const hb = item as HeartbeatItem
        const screen = device(ctx.principal!.partner!, hb.device_id)
        inventory.heartbeat(screen, ctx.now)
        return { device_id: hb.device_id, screen_id: screen.screen_id, status: 'accepted' }
      }))
    }),
    route<AudienceBatchRequest>({
      ...common,
      method: 'post',
      path: '/v1/partner/audience',
      summary: 'FEIN audience updates, up to 1000 per call',
      body: 'AudienceBatchRequest',
      data: 'BatchResult',
      handler: (ctx) => ok(judgeEach(ctx.body.updates, (item) => {
        validate('AudienceUpdate', item)
        const update = item as AudienceUpdate
        const screen = device(ctx.principal!.partner!, update.device_id)
        inventory.applyAudience(screen, update, measuredAt(update, ctx.now))
        return { device_id: update.device_id, screen_id: screen.screen_id, status: 'accepted' }
      }))
    })
  ]
}
