/** OpenRTB 2.6 loss reason codes (list 5.25) oohbid gives: at intake (a rejected bid) and in the waterfall. */
export const LOSS = {
  expired: 2,
  invalidResponse: 3,
  invalidDeal: 4,
  missingMarkup: 7,
  belowAuctionFloor: 100,
  belowDealFloor: 101,
  outbid: 102,
  lostToDeal: 103,
  seatBlocked: 104,
  creativeFiltered: 200,
  creativePending: 201,
  creativeDisapproved: 202,
  advertiserExcluded: 205,
  categoryExcluded: 209,
  /** Exchange-specific (500+): the bid named a FEIN segment the screen's live audience was not in at the decision. */
  audienceNotInSegment: 1000
} as const

/** Words for each loss code, as legacy notifications and logs give them. */
export const LOSS_TEXT: Record<number, string> = {
  2: 'impression opportunity expired',
  3: 'invalid bid response',
  4: 'invalid deal id',
  7: 'missing markup',
  100: 'bid was below auction floor',
  101: 'bid was below deal floor',
  102: 'lost to higher bid',
  103: 'lost to a deal or direct placement',
  104: 'buyer seat blocked',
  200: 'creative filtered',
  201: 'creative filtered: pending approval',
  202: 'creative filtered: disapproved',
  205: 'creative filtered: advertiser exclusions',
  209: 'creative filtered: category exclusions',
  1000: 'live audience not in the bid\'s segment'
}
