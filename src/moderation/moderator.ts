import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Piscina } from 'piscina'
import type { Clock } from '../clock.js'
import { iso } from '../clock.js'
import type { Logger } from '../log.js'
import type { ObjectStore } from '../store/objects.js'
import type { Outbox } from '../store/outbox.js'
import type { CreativeRecord } from '../creatives/records.js'
import type { Store } from '../store/store.js'
import { fetchAsset, FetchError, type FetchOptions } from './fetch-asset.js'
import type { ModerationReply, ModerationTask } from './types.js'

/** Creatives moderated at once (fetch and analysis); the rest wait their turn. */
const CONCURRENT = 4

/**
 * Runs creatives through moderation off the request path: fetch (URL mode), then the moderation worker, then one
 * transaction that stores the outcome and emits creative.moderation.completed. The pool has one thread, so moderation
 * never takes both cores from bidding. Pending work is found again in LMDB after a restart.
 */
export class Moderator {
  readonly #store: Store
  readonly #outbox: Outbox
  readonly #objects: ObjectStore
  readonly #clock: Clock
  readonly #log: Logger
  readonly #fetch: FetchOptions
  readonly #inFlight = new Map<string, Promise<void>>()
  readonly #waiting: Array<() => void> = []
  #running = 0
  #pool: Piscina<ModerationTask, ModerationReply> | undefined
  /** A cluster node's claims: every node holds a pending creative, and one moderates it. */
  #claims: { claim (id: string): Promise<boolean>, release (id: string): Promise<void> } | undefined

  constructor (store: Store, outbox: Outbox, objects: ObjectStore, clock: Clock, log: Logger, fetch: FetchOptions) {
    this.#store = store
    this.#outbox = outbox
    this.#objects = objects
    this.#clock = clock
    this.#log = log
    this.#fetch = fetch
  }

  /**
   * On a cluster: a creative is moderated by the node that claims it first (the one it was registered or confirmed
   * through, or after a restart any node that finds it pending); the others leave it, and receive its outcome.
   */
  claimWith (claims: { claim (id: string): Promise<boolean>, release (id: string): Promise<void> }): void {
    this.#claims = claims
  }

  /** Picks up every creative left pending by a previous run. */
  resume (): void {
    for (const { key, value } of this.#store.creatives.getRange()) if (value.status === 'pending_moderation') this.schedule(key)
  }

  /** Creatives scheduled and not yet moderated (the operator dashboard's queue). */
  get queued (): number {
    return this.#inFlight.size
  }

  /** Moderates a creative soon; call after the transaction that made it pending (a rolled-back one finds nothing). */
  schedule (creativeId: string): void {
    if (this.#inFlight.has(creativeId)) return
    const work = new Promise<void>((resolve) => setImmediate(resolve))
      .then(() => this.#turn())
      .then(() => this.#claimed(creativeId))
      .finally(() => this.#release())
      .catch((err: unknown) => this.#log.error('moderation failed', { creative_id: creativeId, error: err instanceof Error ? err.stack : String(err) }))
      .finally(() => this.#inFlight.delete(creativeId))
    this.#inFlight.set(creativeId, work)
  }

  /**
   * Waits for one of the CONCURRENT slots. Each moderation starts with a DNS lookup, run on libuv's small thread pool
   * that webhook and notice deliveries share: hundreds left pending by a crash, resumed at once, held every thread
   * for seconds when the resolver was slow.
   */
  #turn (): Promise<void> {
    if (this.#running < CONCURRENT) {
      this.#running++
      return Promise.resolve()
    }
    return new Promise((resolve) => this.#waiting.push(resolve))
  }

  #release (): void {
    const next = this.#waiting.shift()
    if (next !== undefined) next()
    else this.#running--
  }

  /** Resolves when nothing is being moderated. */
  async idle (): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.all(this.#inFlight.values())
  }

  async close (): Promise<void> {
    await this.idle()
    await this.#pool?.destroy()
  }

  async #claimed (id: string): Promise<void> {
    const claims = this.#claims
    if (claims === undefined) return await this.#process(id)
    let won: boolean
    try {
      won = await claims.claim(id)
    } catch (err) {
      // The engine could not say (an election): asked again shortly rather than left pending until a restart.
      this.#log.warn('moderation waits for the cluster\'s engine', { creative_id: id, error: err instanceof Error ? err.message : String(err) })
      this.#later(id)
      return
    }
    if (!won) return
    try {
      await this.#process(id)
    } finally {
      await claims.release(id).catch(() => {})
    }
  }

  #later (id: string): void {
    setTimeout(() => this.schedule(id), 1000).unref()
  }

  async #process (id: string): Promise<void> {
    let creative = this.#store.creatives.get(id)
    if (creative === undefined || creative.status !== 'pending_moderation') return
    if (creative.object === undefined) {
      try {
        const { bytes } = await fetchAsset(creative.source_url!, this.#fetch)
        const stored = this.#objects.put(id, bytes)
        creative = this.#update(id, (c) => ({ ...c, object: id, asset: { ...c.asset, bytes: stored.bytes, sha256: stored.sha256 } }))
        if (creative === undefined) return
      } catch (err) {
        if (!(err instanceof FetchError)) throw err
        this.#finish(id, 'rejected', { failure: `The asset could not be fetched: ${err.message}.` })
        return
      }
    }
    // An upload confirmed through this node may have been stored through another: its bytes come from the engine.
    if (!await this.#objects.local(creative.object!)) {
      this.#later(id)
      return
    }
    const reply = await this.#worker().run({ path: this.#objects.path(creative.object!), declaredType: creative.content_type })
    if (!reply.ok) {
      this.#finish(id, 'rejected', { failure: `The asset could not be read: ${reply.failure}.` })
      return
    }
    const declared = creative.content_type.split('/')[0]
    const actual = reply.asset.media_type.split('/')[0]
    if (declared !== actual) {
      // A video declared as an image (or the reverse) would be played by the wrong element and fail on screen.
      this.#finish(id, 'rejected', { failure: `The asset is ${reply.asset.media_type}, not the declared ${creative.content_type}.`, asset: { ...creative.asset, ...reply.asset } })
      return
    }
    this.#finish(id, reply.moderation.decision, { moderation: reply.moderation, asset: { ...creative.asset, ...reply.asset } })
  }

  #worker (): Piscina<ModerationTask, ModerationReply> {
    this.#pool ??= new Piscina<ModerationTask, ModerationReply>({ filename: new URL('./worker.js', import.meta.url).href, workerData: { logLevel: this.#log.level }, minThreads: 0, maxThreads: 1, idleTimeout: 60_000 })
    return this.#pool
  }

  /**
   * Runs moderation's models over an asset at a URL and keeps nothing (content standards' calibration): the same fetch
   * guard, worker and slots as a creative's moderation.
   */
  async analyze (url: string, declaredType: string): Promise<ModerationReply> {
    await this.#turn()
    try {
      let bytes: Buffer
      try {
        ({ bytes } = await fetchAsset(url, this.#fetch))
      } catch (err) {
        if (!(err instanceof FetchError)) throw err
        return { ok: false, failure: `the asset could not be fetched: ${err.message}` }
      }
      const dir = await mkdtemp(join(tmpdir(), 'oohbid-analyze-'))
      try {
        await writeFile(join(dir, 'asset'), bytes)
        return await this.#worker().run({ path: join(dir, 'asset'), declaredType })
      } finally {
        await rm(dir, { recursive: true, force: true })
      }
    } finally {
      this.#release()
    }
  }

  #update (id: string, change: (c: CreativeRecord) => CreativeRecord): CreativeRecord | undefined {
    return this.#store.write(() => {
      const current = this.#store.creatives.get(id)
      if (current === undefined) return undefined
      const next = change(current)
      this.#store.creatives.putSync(id, next)
      return next
    })
  }

  /** Stores the outcome and emits creative.moderation.completed in one transaction. */
  #finish (id: string, status: CreativeRecord['status'], fields: Partial<CreativeRecord>): void {
    const now = iso(this.#clock.now())
    this.#store.write(() => {
      const current = this.#store.creatives.get(id)
      if (current === undefined || current.status !== 'pending_moderation') return
      const next: CreativeRecord = { ...current, ...fields, status, moderated_at: now, updated_at: now }
      this.#store.creatives.putSync(id, next)
      this.#outbox.append('creative.moderation.completed', `creative:${id}`, completedEvent(next), current.seat_id)
    })
  }
}

/** The data of creative.moderation.completed. */
export function completedEvent (c: CreativeRecord): Record<string, unknown> {
  return {
    creative_id: c.creative_id,
    status: c.status,
    decision: c.moderation?.decision ?? c.status,
    reasons: c.moderation?.reasons ?? (c.failure !== undefined ? [c.failure] : []),
    flags: c.moderation?.flags ?? null,
    age_rating: c.moderation?.age_rating ?? null,
    iab_categories: c.moderation?.iab_categories.map((x) => x.id) ?? [],
    reviewed: (c.reviews?.length ?? 0) > 0
  }
}
