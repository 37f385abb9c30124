import type { Deps } from '../../deps.js'
import { ApiError } from '../../errors.js'
import type { ImpressionBatchRequest, ImpressionBatchResult, ImpressionItem } from '../../generated/types.js'
import { itemError } from '../../http/envelope.js'
import { ok, route, type RouteDef } from '../../http/route.js'
import { validate } from '../../http/validate.js'
import { OFFLINE_WINDOW_MS, signPlay } from '../chain.js'
import { placePlays, provedAnswer, thenProved } from '../placing.js'
import type { ProofCommand, ProofVerdict } from '../records.js'

/** How far ahead of the service's clock a device clock may run. */
const MAX_SKEW_MS = 5 * 60_000

type Item = ImpressionBatchResult['results'][number]

/** A play's verdict as its item in the batch's answer. */
function itemOf (index: number, impressionId: string, verdict: ProofVerdict): Item {
  switch (verdict.status) {
    case 'accepted': return { index, impressionId, status: 'accepted', proof_id: verdict.proof_id, givt: verdict.givt }
    case 'duplicate': return { index, impressionId, status: 'duplicate', proof_id: verdict.proof_id }
    case 'taken': return { index, impressionId, status: 'rejected', error: itemError(takenError()) }
    case 'too_old': return { index, impressionId, status: 'rejected', error: itemError(tooOldError()) }
  }
}

const takenError = (): ApiError => new ApiError('already_exists', 'This impressionId is already taken by another play; give every play a unique id (a UUID).', { param: 'impressionId' })
const tooOldError = (): ApiError => new ApiError('invalid_date', 'timestamp is older than the 72-hour window for plays uploaded after being offline.', { param: 'timestamp' })

/** The partner's server-side impression intake (spec: impression batch operation, path not shown). */
export function impressionRoutes ({ store, inventory, proofSigner, outbox, funnel }: Deps): RouteDef[] {
  /** The checks of a play not proven yet: its time within the offline window, and its creative; the ad's buyer. */
  const newPlay = (item: ImpressionItem, now: number): { seat_id: string, creative_id: string } => {
    if (item.timestamp > now + MAX_SKEW_MS) throw new ApiError('invalid_date', 'timestamp is in the future.', { param: 'timestamp' })
    if (item.timestamp < now - OFFLINE_WINDOW_MS) throw tooOldError()
    const creative = store.creatives.get(item.adId)
    if (creative === undefined) throw new ApiError('creative_not_found', `No creative ${item.adId}.`, { param: 'adId' })
    return { seat_id: creative.seat_id, creative_id: creative.creative_id }
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
      description: 'Each play takes its place in its screen\'s proof chain, and an impression id proves once: a repeat is a duplicate naming the first proof. On a cluster node the answer waits until the cluster\'s proof log has placed every play of the batch (503 with Retry-After when it cannot in time: send the batch again, its proven plays come back as duplicates), and a batch naming a device or an ad the node has not heard of is judged once the node has caught up with the cluster: one registered or uploaded through another node a moment before is not refused.',
      body: 'ImpressionBatchRequest',
      data: 'ImpressionBatchResult',
      proves: true,
      // A device registered, or an ad uploaded, through another node a moment ago: the handler's own lookups, asked first.
      namesUnknown: (ctx) => ctx.body.impressions.some((raw) => {
        try {
          validate('ImpressionItem', raw)
        } catch {
          // The handler refuses it as it is: nothing it names is looked up.
          return false
        }
        const { deviceId, adId, impressionId } = raw as ImpressionItem
        if (inventory.screenOfDevice(ctx.principal!.partner!.id, deviceId) === undefined) return true
        return store.creatives.get(adId) === undefined && store.proofByImpression.get(impressionId) === undefined
      }),
      handler: (ctx) => {
        const partner = ctx.principal!.partner!
        const results: Item[] = []
        const plays: Array<{ index: number, command: ProofCommand }> = []
        ctx.body.impressions.forEach((raw, index) => {
          const impressionId = typeof (raw as { impressionId?: unknown }).impressionId === 'string' ? (raw as { impressionId: string }).impressionId : undefined
          try {
            validate('ImpressionItem', raw)
            const item = raw as ImpressionItem
            // Ownership first: nothing about an impression id is looked up for a device the partner does not own.
            const screen = inventory.screenOfDevice(partner.id, item.deviceId)
            if (screen === undefined) throw new ApiError('device_not_found', `No device ${item.deviceId} is registered by this partner.`, { param: 'deviceId' })
            // A play on another partner's screen is not this partner's to repeat, reconcile or count: its proof stays
            // unnamed, and the id is simply taken (placeProof decides it again where the play is placed).
            const known = store.proofByImpression.get(item.impressionId)
            const first = known !== undefined ? store.proofs.get(known) : undefined
            if (first !== undefined && first.screenId !== screen.screen_id) throw takenError()
            // A play proven already is a repeat (placeProof reconciles or counts it): its timing and creative are not judged again.
            const ad = first ?? newPlay(item, ctx.now)
            const fields = { timestamp: item.timestamp, adId: item.adId, impressionId: item.impressionId, screenId: screen.screen_id, deviceId: screen.device_id }
            const facts = { verification_tier: 'impression_callback' as const, seat_id: ad.seat_id, creative_id: ad.creative_id, spot_id: null, duration_ms: Math.round(item.duration * 1000), completed: item.completed }
            plays.push({ index, command: signPlay(store, proofSigner, screen, fields, facts, screen.slot_duration_seconds, partner.id) })
            results.push({ index, impressionId: item.impressionId, status: 'accepted' })
          } catch (err) {
            if (!(err instanceof ApiError)) throw err
            results.push({ index, ...(impressionId !== undefined ? { impressionId } : {}), status: 'rejected', error: itemError(err) })
          }
        })
        const placed = placePlays({ store, outbox, funnel }, plays.map((p) => p.command), ctx.now, ctx.dryRun)
        return provedAnswer(thenProved(placed, (verdicts) => {
          plays.forEach(({ index, command }, i) => { results[index] = itemOf(index, command.fields.impressionId, verdicts[i]!) })
          const count = (status: Item['status']): number => results.filter((r) => r.status === status).length
          return ok({ accepted: count('accepted'), duplicates: count('duplicate'), rejected: count('rejected'), results } satisfies ImpressionBatchResult)
        }))
      }
    })
  ]
}
