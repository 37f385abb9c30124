import { seatItems } from '../accounts/seat-lists.js'
import { ApiError } from '../errors.js'
import type { Store } from '../store/store.js'
import type { MediaBuyRecord } from './records.js'

// A seat's media buys, as every tool that names or lists them reads them.

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
