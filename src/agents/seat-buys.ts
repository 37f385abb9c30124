import { seatItems } from '../accounts/seat-lists.js'
import { ApiError } from '../errors.js'
import type { Store } from '../store/store.js'
import type { ToolCall } from './call.js'
import type { MediaBuyRecord } from './records.js'

// A seat's media buys, as every tool that names, lists or stores them reads and writes them.

type MediaBuyStatus = 'pending_activation' | 'active' | 'paused' | 'completed'

/** The seat's media buy by id or buyer_ref; 404 media_buy_not_found when it is unknown or another seat's. */
export function seatMediaBuy (store: Store, seatId: string, ref: { media_buy_id?: string, buyer_ref?: string }, param = 'media_buy_id'): MediaBuyRecord {
  const own = (b: MediaBuyRecord | undefined) => b !== undefined && b.seat_id.toLowerCase() === seatId.toLowerCase() ? b : undefined
  const buy = ref.media_buy_id !== undefined
    ? own(store.mediaBuys.get(ref.media_buy_id))
    : ref.buyer_ref !== undefined ? seatMediaBuys(store, seatId).find((b) => b.buyer_ref === ref.buyer_ref) : undefined
  if (ref.media_buy_id === undefined && ref.buyer_ref === undefined) throw new ApiError('invalid_parameter', 'Name the media buy by media_buy_id or buyer_ref.', { param })
  if (buy === undefined) throw new ApiError('media_buy_not_found', `No media buy ${ref.media_buy_id ?? ref.buyer_ref} belongs to this seat.`, { param: ref.media_buy_id !== undefined ? param : 'buyer_ref' })
  return buy
}

/** The seat's media buys, newest first. */
export function seatMediaBuys (store: Store, seatId: string): MediaBuyRecord[] {
  return seatItems(store, 'media_buy', seatId, (id) => store.mediaBuys.get(id))
}

/** The AdCP status of a media buy: paused by the buyer, over, waiting for its start or a creative, or running. */
export function statusOf (buy: MediaBuyRecord, now: number): MediaBuyStatus {
  if (buy.paused) return 'paused'
  if (now >= Date.parse(buy.end_time)) return 'completed'
  if (now < Date.parse(buy.start_time) || buy.packages.every((p) => p.campaign_id === undefined)) return 'pending_activation'
  return 'active'
}

/**
 * The seat's media buys a request names by media_buy_ids and buyer_refs (all of them, newest first, when it names
 * none), and an AdCP error for each name that is unknown or another seat's; 404 media_buy_not_found when it named
 * only such.
 */
export function namedBuys (call: Pick<ToolCall, 'store' | 'seat'>, req: { media_buy_ids?: string[], buyer_refs?: string[] }): { buys: MediaBuyRecord[], errors: Array<{ code: string, message: string, field: string }> } {
  if (req.media_buy_ids === undefined && req.buyer_refs === undefined) return { buys: seatMediaBuys(call.store, call.seat.seat_id), errors: [] }
  const refs = [...(req.media_buy_ids ?? []).map((id, i) => ({ ref: { media_buy_id: id }, field: `media_buy_ids.${i}` })), ...(req.buyer_refs ?? []).map((r, i) => ({ ref: { buyer_ref: r }, field: `buyer_refs.${i}` }))]
  const buys: MediaBuyRecord[] = []
  const errors: Array<{ code: string, message: string, field: string }> = []
  for (const { ref, field } of refs) {
    try {
      buys.push(seatMediaBuy(call.store, call.seat.seat_id, ref, field))
    } catch (err) {
      if (!(err instanceof ApiError)) throw err
      errors.push({ code: err.code, message: err.message, field })
    }
  }
  if (buys.length === 0) throw new ApiError('media_buy_not_found', errors.map((e) => e.message).join(' ') || 'No media buy was named.', { param: errors[0]?.field ?? 'media_buy_ids' })
  return { buys, errors }
}

/** Whether a buy has a package that waits for a creative's approval to play. */
export const waits = (buy: MediaBuyRecord) => buy.packages.some((p) => p.campaign_id === undefined && p.creative_ids.length > 0)

/**
 * Stores a media buy and keeps the index of buys waiting for a creative (media_buys_waiting: id -> the buy's end), so
 * that the activation job reads only those. Call inside Store.write.
 */
export function saveBuy (store: Store, buy: MediaBuyRecord): void {
  store.mediaBuys.putSync(buy.media_buy_id, buy)
  if (waits(buy)) store.mediaBuysWaiting.putSync(buy.media_buy_id, Date.parse(buy.end_time))
  else store.mediaBuysWaiting.removeSync(buy.media_buy_id)
}
