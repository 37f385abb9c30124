import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { ImpressionBatchRequest, ImpressionBatchResult, ImpressionItem, ProofRecord } from '../../generated/types.js'
import { itemError } from '../../http/envelope.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import { validate } from '../../http/validate.js'
import { countDuplicate, issueProof, proofEventData } from '../chain.js'
import { givtOf } from '../givt.js'

/** How far back a device that was offline may report its plays (their original timestamps). */
export const OFFLINE_WINDOW_MS = 72 * 3_600_000
/** How far ahead of the service's clock a device clock may run. */
const MAX_SKEW_MS = 5 * 60_000

/** The partner's server-side impression intake (spec: impression batch operation, path not shown). */
export function impressionRoutes ({ store, inventory, proofSigner, outbox, funnel }: Deps): RouteDef[] {
  /** The partner's impressions reported for the UTC day of a play, this one included. */
  const countDay = (partnerId: string, at: number): number => {
    const key = `partner-impressions:${partnerId}:${new Date(at).toISOString().slice(0, 10)}`
    const n = ((store.meta.get(key) as number | undefined) ?? 0) + 1
    store.meta.putSync(key, n)
    return n
  }
  /**
   * A callback for an impression that already has a proof. The first callback for a play the service proved itself
   * (its player or VAST reported it) reconciles the partner's count with ours: impression.delivered, reconciled: true.
   * Any other repeat is a duplicate impression id, filtered (no second proof) and counted for the seat's GIVT report.
   */
  const reconcile = (partnerId: string, proof: ProofRecord, at: number): void => {
    const mark = `reconciled:${proof.proof_id}`
    if (proof.verification_tier === 'impression_callback' || store.meta.get(mark) !== undefined) {
      if (proof.seat_id !== null) countDuplicate(store, proof.seat_id, proof.timestamp)
      return
    }
    store.meta.putSync(mark, partnerId)
    outbox.append('impression.delivered', `proof:${proof.proof_id}`, { ...proofEventData(proof), partner_id: partnerId, reconciled: true, partner_impressions_today: countDay(partnerId, at) }, proof.seat_id ?? undefined)
  }
  return [
    route<ImpressionBatchRequest>({
      tag: 'Partner',
      envelope: 'nested',
      auth: 'partner',
      rateGroup: 'partner',
      method: 'post',
      path: '/v1/partner/impressions',
      summary: 'Plays reported by devices, up to 1000 per call; each accepted play gets a signed proof',
      body: 'ImpressionBatchRequest',
      data: 'ImpressionBatchResult',
      handler: (ctx) => {
        const partner = ctx.principal!.partner!
        const out: ImpressionBatchResult = { accepted: 0, duplicates: 0, rejected: 0, results: [] }
        ctx.body.impressions.forEach((raw, index) => {
          const impressionId = typeof (raw as { impressionId?: unknown }).impressionId === 'string' ? (raw as { impressionId: string }).impressionId : undefined
          try {
            validate('ImpressionItem', raw)
            const item = raw as ImpressionItem
            // Ownership first: nothing about an impression id is looked up for a device the partner does not own.
            const screen = inventory.screenOfDevice(partner.id, item.deviceId)
            if (screen === undefined) throw new ApiError('device_not_found', `No device ${item.deviceId} is registered by this partner.`, { param: 'deviceId' })
            const known = store.proofByImpression.get(item.impressionId)
            if (known !== undefined) {
              // A play on another partner's screen is not this partner's to repeat, reconcile or count: its proof stays
              // unnamed, and the id is simply taken.
              const proof = store.proofs.get(known)!
              if (store.screens.get(proof.screenId)?.partner_id !== partner.id) throw new ApiError('already_exists', 'This impressionId is already taken by another play; give every play a unique id (a UUID).', { param: 'impressionId' })
              reconcile(partner.id, proof, item.timestamp)
              out.results.push({ index, impressionId: item.impressionId, status: 'duplicate', proof_id: known })
              out.duplicates++
              return
            }
            if (item.timestamp > ctx.now + MAX_SKEW_MS) throw new ApiError('invalid_date', 'timestamp is in the future.', { param: 'timestamp' })
            if (item.timestamp < ctx.now - OFFLINE_WINDOW_MS) throw new ApiError('invalid_date', 'timestamp is older than the 72-hour window for plays uploaded after being offline.', { param: 'timestamp' })
            const creative = store.creatives.get(item.adId)
            if (creative === undefined) throw new ApiError('creative_not_found', `No creative ${item.adId}.`, { param: 'adId' })
            const durationMs = Math.round(item.duration * 1000)
            const givt = givtOf(store, screen, { timestamp: item.timestamp, durationMs, completed: item.completed, slotSeconds: screen.slot_duration_seconds })
            const proof = issueProof({ store, proofSigner, outbox, funnel }, { timestamp: item.timestamp, adId: item.adId, impressionId: item.impressionId, screenId: screen.screen_id, deviceId: screen.device_id }, {
              verification_tier: 'impression_callback', seat_id: creative.seat_id, creative_id: creative.creative_id, spot_id: null, duration_ms: durationMs, completed: item.completed, givt
            }, ctx.now)
            outbox.append('impression.delivered', `proof:${proof.proof_id}`, { ...proofEventData(proof), partner_id: partner.id, reconciled: false, partner_impressions_today: countDay(partner.id, item.timestamp) }, creative.seat_id)
            out.results.push({ index, impressionId: item.impressionId, status: 'accepted', proof_id: proof.proof_id, givt })
            out.accepted++
          } catch (err) {
            if (!(err instanceof ApiError)) throw err
            out.results.push({ index, ...(impressionId !== undefined ? { impressionId } : {}), status: 'rejected', error: itemError(err) })
            out.rejected++
          }
        })
        return ok(out)
      }
    })
  ]
}
