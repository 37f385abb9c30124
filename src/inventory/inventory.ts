import type { Clock } from '../clock.js'
import { iso } from '../clock.js'
import { ApiError } from '../errors.js'
import type { AudienceUpdate, DeviceRegisterRequest, ScreenSettingsRequest } from '../generated/types.js'
import type { Outbox } from '../store/outbox.js'
import type { FeinState, IndexKey, PartnerRecord, ScreenRecord, ScreenStatus } from './records.js'
import { rewriteInBatches, runOnce } from '../store/rewrite.js'
import { setting } from '../store/settings.js'
import type { Store } from '../store/store.js'
import { indexKey, indexTuple, SOURCES, type Source } from './adslot-index.js'
import { collectPast, keepWindow, pastDue, recordMove } from './adslot-versions.js'
import { applyUpdate, emptyFein, liveUntil, quality, vas7d } from './fein.js'
import { encodeRows } from './rows.js'
import { DueQueue } from './due-queue.js'
import type { InventoryOptions } from './options.js'
import { checkTimeAndHours, registeredScreen, screenIdFor } from './registration.js'

/** Per-source counts kept in the same transactions as the index, so dry runs and rollbacks cannot skew them. */
export interface SourceCounts {
  total: number
  sensors: number
  enriched: number
}

/**
 * Moves the player bindings an earlier version kept in each screen's status into the players table, once, before any
 * hot thread serves (the supervisor calls it at start).
 */
export function adoptLegacyBindings (store: Store): void {
  runOnce(store, 'players', () => rewriteInBatches(store, store.status, (screenId, value) => {
    const { player, ...status } = value as ScreenStatus & { player?: string }
    if (player === undefined) return
    store.players.putSync(screenId, player)
    store.status.putSync(screenId, status)
  }))
}

/**
 * The record a cluster node locks (RouteDef.exclusive) to rewrite a partner or its screens: its registrations, its
 * screens' settings and the operator's change of its source each read what they rewrite.
 */
export function partnerRecord (partnerId: string): string {
  return `partner:${partnerId}`
}

/**
 * Screens, their FEIN state and heartbeats, and the adslots index that orders them. Every write goes through here and
 * runs inside the caller's Store.write transaction, so a screen, its index entry, its pre-encoded rows, the counts
 * and the events it causes commit together.
 */
export class Inventory {
  readonly store: Store
  readonly #outbox: Outbox
  readonly #clock: Clock
  readonly #options: InventoryOptions
  readonly #liveExpiry = new DueQueue()
  readonly #heartbeatDeadline = new DueQueue()

  constructor (store: Store, outbox: Outbox, clock: Clock, options: InventoryOptions) {
    this.store = store
    this.#outbox = outbox
    this.#clock = clock
    this.#options = options
    if (options.resume !== false) this.#resume()
  }

  /** After a restart: re-arm freshness expiries and heartbeat deadlines from what is stored. */
  #resume (): void {
    const now = this.#clock.now()
    for (const { key, value } of this.store.fein.getRange()) {
      const until = liveUntil(value, now)
      this.#liveExpiry.add(until ?? now, key)
    }
    for (const { key, value } of this.store.status.getRange()) {
      if (value.online && value.last_heartbeat !== null && this.#watches(value)) this.#heartbeatDeadline.add(value.last_heartbeat + this.#options.heartbeatTimeoutMs, key)
    }
  }

  /** Whether this node keeps the screen's heartbeat deadline: it recorded the last heartbeat (or is the only node). */
  #watches (status: ScreenStatus): boolean {
    return status.node === undefined || status.node === this.store.share.node
  }

  /** The embed URL of a screen's player. */
  embedUrl (screen: ScreenRecord): string {
    return `${this.#options.baseUrl}/embed/${screen.embed_token}`
  }

  /** The partner-display switch: partner inventory is listed only when it is on. */
  sourcesEnabled (): Source[] {
    return (setting(this.store, 'partner_display') ?? this.#options.partnerDisplay) ? ['owned', 'partner'] : ['owned']
  }

  counts (source: Source): SourceCounts {
    return (this.store.meta.get(`counts:${source}`) as SourceCounts | undefined) ?? { total: 0, sensors: 0, enriched: 0 }
  }

  statusOf (screenId: string): ScreenStatus {
    return this.store.status.get(screenId) ?? { last_heartbeat: null, online: false, hours: [] }
  }

  /** pending (never heard from), online or offline. */
  statusName (status: ScreenStatus): 'pending' | 'online' | 'offline' {
    return status.last_heartbeat === null ? 'pending' : status.online ? 'online' : 'offline'
  }

  screenOfDevice (partnerId: string, deviceId: string): ScreenRecord | undefined {
    const id = this.store.devices.get(`${partnerId}\u0000${deviceId}`)
    return id === undefined ? undefined : this.store.screens.get(id)
  }

  /** Registers or updates a device as a screen; returns the screen and whether it is new. Call inside Store.write. */
  upsertDevice (partner: PartnerRecord, req: DeviceRegisterRequest, now: number): { screen: ScreenRecord, created: boolean } {
    const id = screenIdFor(partner.id, req.device_id)
    const existing = this.store.screens.get(id)
    const screen = registeredScreen(id, partner, req, existing, now)
    this.#save(screen, existing)
    if (existing === undefined) {
      this.store.devices.putSync(`${partner.id}\u0000${req.device_id}`, id)
      this.store.embeds.putSync(screen.embed_token, id)
      this.#outbox.append('screen.registered', `screen:${id}`, { screen_id: id, partner_id: partner.id, device_id: req.device_id })
    }
    return { screen, created: existing === undefined }
  }

  /** Applies partner settings to a screen. Call inside Store.write. */
  updateSettings (screen: ScreenRecord, patch: ScreenSettingsRequest, now: number): ScreenRecord {
    checkTimeAndHours(patch.timezone, patch.operating_hours ?? undefined)
    const next: ScreenRecord = { ...screen, updated_at: iso(now) }
    if (patch.name !== undefined) next.name = patch.name
    if (patch.floor_price_cpm !== undefined) next.floor_price_cpm = patch.floor_price_cpm
    if (patch.slot_duration_seconds !== undefined) next.slot_duration_seconds = patch.slot_duration_seconds
    if (patch.blocked_categories !== undefined) next.blocked_categories = patch.blocked_categories
    if (patch.blocked_advertisers !== undefined) next.blocked_advertisers = patch.blocked_advertisers.map((d) => d.toLowerCase())
    if (patch.max_age_rating !== undefined) next.max_age_rating = patch.max_age_rating
    if (patch.address !== undefined) next.location = { ...next.location, address: patch.address }
    if (patch.timezone !== undefined) next.timezone = patch.timezone
    if (patch.auction_enabled !== undefined) next.auction_enabled = patch.auction_enabled
    if (patch.operating_hours === null) delete next.operating_hours
    else if (patch.operating_hours !== undefined) next.operating_hours = patch.operating_hours
    if (patch.image_url === null) delete next.image_url
    else if (patch.image_url !== undefined) next.image_url = patch.image_url
    this.#save(next, screen)
    return next
  }

  /** Classifies a partner as owned or partner inventory, and moves all its screens there. Call inside Store.write. */
  setPartnerSource (partner: PartnerRecord, source: Source, now: number): { partner: PartnerRecord, moved: number } {
    const next = { ...partner, source }
    this.store.partners.putSync(partner.id, next)
    let moved = 0
    for (const { value } of this.store.devices.getRange({ start: `${partner.id}\u0000`, end: `${partner.id}\u0001` })) {
      const screen = this.store.screens.get(value)
      if (screen === undefined || screen.source === source) continue
      this.#save({ ...screen, source, updated_at: iso(now) }, screen)
      moved++
    }
    return { partner: next, moved }
  }

  /** Stores a new partner and its slug, which must be free. Call inside Store.write. */
  addPartner (partner: PartnerRecord): void {
    this.store.partners.putSync(partner.id, partner)
    this.store.partnerSlugs.putSync(partner.slug, partner.id)
  }

  /** Applies one FEIN measurement to a screen. Call inside Store.write. */
  applyAudience (screen: ScreenRecord, update: AudienceUpdate, at: number): void {
    if (!screen.capabilities.fein) throw new ApiError('invalid_parameter', 'This device did not declare FEIN sensors (capabilities.fein); register it with them first.', { param: 'device_id' })
    const state = applyUpdate(this.store.fein.get(screen.screen_id) ?? emptyFein(), update, at)
    this.store.fein.putSync(screen.screen_id, state)
    const until = liveUntil(state, this.#clock.now())
    if (until !== undefined) this.#liveExpiry.add(until, screen.screen_id)
    this.#place(screen, state, this.statusOf(screen.screen_id).online)
  }

  /** Records a heartbeat; a screen that was offline comes back online (event screen.online). Call inside Store.write. */
  heartbeat (screen: ScreenRecord, at: number): void {
    const status = this.statusOf(screen.screen_id)
    const hourStart = Math.floor(at / 3_600_000) * 3_600_000
    const hours = status.hours.filter(([h]) => h > at - 25 * 3_600_000)
    const bucket = hours.find(([h]) => h === hourStart)
    if (bucket) bucket[1]++
    else hours.push([hourStart, 1])
    const wasOffline = status.last_heartbeat !== null && !status.online
    const { offline_at: offlineAt, ...kept } = status
    const next: ScreenStatus = { ...kept, last_heartbeat: at, online: true, hours }
    if (this.store.share.node !== undefined) next.node = this.store.share.node
    this.store.status.putSync(screen.screen_id, next)
    this.#heartbeatDeadline.add(at + this.#options.heartbeatTimeoutMs, screen.screen_id)
    if (!status.online) this.#place(screen, this.store.fein.get(screen.screen_id), true)
    if (wasOffline) {
      const since = offlineAt ?? (status.last_heartbeat !== null ? status.last_heartbeat + this.#options.heartbeatTimeoutMs : null)
      this.#outbox.append('screen.online', `screen:${screen.screen_id}`, { screen_id: screen.screen_id, partner_id: screen.partner_id, status: 'online', at: iso(at), last_heartbeat_at: status.last_heartbeat !== null ? iso(status.last_heartbeat) : null, offline_since: since !== null ? iso(since) : null })
    }
  }

  /** Takes an online screen offline now (its player page closed); event screen.offline. Call inside Store.write. */
  leave (screen: ScreenRecord, at: number): void {
    const status = this.statusOf(screen.screen_id)
    if (status.online && status.last_heartbeat !== null) this.#goOffline(screen, status, at, at)
  }

  #goOffline (screen: ScreenRecord, status: ScreenStatus, now: number, since: number): void {
    this.store.status.putSync(screen.screen_id, { ...status, online: false, offline_at: since })
    this.#place(screen, this.store.fein.get(screen.screen_id), false)
    this.#outbox.append('screen.offline', `screen:${screen.screen_id}`, { screen_id: screen.screen_id, partner_id: screen.partner_id, status: 'offline', at: iso(now), last_heartbeat_at: status.last_heartbeat !== null ? iso(status.last_heartbeat) : null, offline_since: iso(since) })
  }

  /** The device fingerprint a screen's player page is bound to, if any. */
  playerOf (screenId: string): string | undefined {
    return this.store.players.get(screenId)
  }

  /**
   * Binds a screen's player page to the device fingerprint it was first opened with (embed_url?fp=...), so a copied
   * embed_url cannot play, and count plays, elsewhere: another fingerprint is 409 device_mismatch until the partner
   * releases the binding. A page without fp is refused once the screen is bound. A first bind writes in the caller's
   * transaction, or in one of its own.
   */
  bindPlayer (screen: ScreenRecord, fp: string | undefined): void {
    const player = this.playerOf(screen.screen_id)
    if (player === undefined) {
      if (fp === undefined) return
      // Its own transaction when the caller has none (the spot feed runs outside one): a first bind is rare. Read again
      // under the writer lock, so that of two pages binding at once the second meets the first's fp.
      if (!this.store.inTransaction) return this.store.write(() => this.bindPlayer(screen, fp))
      this.store.players.putSync(screen.screen_id, fp)
      return
    }
    if (fp !== player) throw new ApiError('device_mismatch', 'This embed_url is bound to another device: open it with the fp it was first opened with, or have the partner release the binding (DELETE /v1/partner/devices/{device_id}/player).', { param: 'fp' })
  }

  /** Releases a screen's player binding: the next page opened binds it again. Call inside Store.write. */
  releasePlayer (screen: ScreenRecord): void {
    this.store.players.removeSync(screen.screen_id)
  }

  /**
   * Periodic work, on the injected clock: live screens whose signals went stale move down the adslots order, and
   * screens past their heartbeat deadline go offline (event screen.offline). The thread that resumes also drops the
   * past adslots keys no walk can read any more. Returns what changed.
   */
  runJobs (): { demoted: number, offline: number } {
    const now = this.#clock.now()
    let demoted = 0
    let offline = 0
    const keepMs = keepWindow(this.#options.cursorTtlMs)
    if (this.#options.resume !== false && pastDue(this.store, now, keepMs)) this.store.write(() => collectPast(this.store, now, keepMs))
    const stale = this.#liveExpiry.take(now)
    const late = this.#heartbeatDeadline.take(now)
    if (stale.length === 0 && late.length === 0) return { demoted, offline }
    this.store.write(() => {
      for (const id of stale) {
        const screen = this.store.screens.get(id)
        if (screen === undefined) continue
        const state = this.store.fein.get(id)
        const until = state !== undefined ? liveUntil(state, now) : undefined
        if (until !== undefined) { this.#liveExpiry.add(until, id); continue }
        if (this.#place(screen, state, this.statusOf(id).online)) demoted++
      }
      for (const id of late) {
        const status = this.store.status.get(id)
        const screen = this.store.screens.get(id)
        if (status === undefined || screen === undefined || !status.online || status.last_heartbeat === null || !this.#watches(status)) continue
        const deadline = status.last_heartbeat + this.#options.heartbeatTimeoutMs
        if (deadline > now) { this.#heartbeatDeadline.add(deadline, id); continue }
        this.#goOffline(screen, status, now, deadline)
        offline++
      }
    })
    return { demoted, offline }
  }

  /**
   * A cluster node: rebuilds what this node derives from a screen's row that another node wrote and the engine
   * delivered (src/cluster/applier.ts): the screen's pre-encoded rows, its place in the adslots order and the counts,
   * and the freshness expiry of its signals. Nothing here is replicated or raises events: the writing node did that.
   * Call inside Store.write.
   */
  applied (table: string, key: string): void {
    if (table !== 'screens' && table !== 'fein' && table !== 'status') return
    const screen = this.store.screens.get(key)
    if (screen === undefined) return
    if (table === 'screens') this.#encode(screen)
    const state = this.store.fein.get(key)
    const until = state !== undefined ? liveUntil(state, this.#clock.now()) : undefined
    if (until !== undefined) this.#liveExpiry.add(until, key)
    this.#place(screen, state, this.statusOf(key).online)
  }

  /** Stores a screen with its rows and index entry. */
  #save (screen: ScreenRecord, previous: ScreenRecord | undefined): void {
    this.store.screens.putSync(screen.screen_id, screen)
    this.#encode(screen)
    if (previous !== undefined && previous.capabilities.fein !== screen.capabilities.fein) this.store.fein.removeSync(screen.screen_id)
    this.#place(screen, this.store.fein.get(screen.screen_id), this.statusOf(screen.screen_id).online)
  }

  #encode (screen: ScreenRecord): void {
    const partner = this.store.partners.get(screen.partner_id)
    this.store.rows.putSync(screen.screen_id, encodeRows(screen, { id: screen.partner_id, name: partner?.name ?? screen.partner_id, domain: partner?.domain ?? this.#options.domain }))
  }

  /**
   * Puts the screen at its place in the adslots order (or out of it when auction is disabled) and keeps the
   * per-source counts. Returns whether the key moved.
   */
  #place (screen: ScreenRecord, state: FeinState | undefined, online: boolean): boolean {
    const now = this.#clock.now()
    const q = quality(state, screen.capabilities.fein, now)
    const key: IndexKey | undefined = screen.auction_enabled ? indexKey(screen, q, state !== undefined && screen.capabilities.fein ? vas7d(state, now) : null) : undefined
    const oldKey = this.store.adslotPos.get(screen.screen_id)
    const oldTuple = oldKey !== undefined ? this.store.adslotIndex.get(oldKey) : undefined
    const moved = oldKey === undefined || key === undefined || oldKey.some((v, i) => v !== key[i])
    if (oldKey !== undefined) this.#count(SOURCES[oldKey[0]]!, oldTuple?.[5] === 1, oldKey[1] < 2, -1)
    if (oldKey !== undefined && moved) this.store.adslotIndex.removeSync(oldKey)
    const held = oldTuple?.[12] ?? 0
    const since = moved && (oldKey !== undefined || key !== undefined) ? recordMove(this.store, screen.screen_id, oldKey, held, now) : held
    if (key === undefined) {
      this.store.adslotPos.removeSync(screen.screen_id)
      return oldKey !== undefined
    }
    this.store.adslotIndex.putSync(key, indexTuple(screen, online, since))
    if (moved) this.store.adslotPos.putSync(screen.screen_id, key)
    this.#count(screen.source, screen.capabilities.fein, key[1] < 2, 1)
    return moved && oldKey !== undefined
  }

  #count (source: Source, sensors: boolean, enriched: boolean, delta: 1 | -1): void {
    const c = this.counts(source)
    this.store.meta.putSync(`counts:${source}`, { total: c.total + delta, sensors: c.sensors + (sensors ? delta : 0), enriched: c.enriched + (enriched ? delta : 0) })
  }
}
