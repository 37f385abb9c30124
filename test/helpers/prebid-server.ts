// The request checks Prebid Server runs before an auction (prebid/prebid-server, endpoints/openrtb2/auction.go:
// validateExactlyOneInventoryType, validateImp and validateDevice), restated so that our bid requests are held to a
// real exchange's rules rather than to our own schema alone. Each returns Prebid Server's error text.

type Json = Record<string, any>

/** Prebid Server's answer to a bid request: undefined when it would run the auction, else its first error. */
export function prebidServerRejects (req: Json): string | undefined {
  const kinds = ['site', 'app', 'dooh'].filter((k) => req[k] !== undefined && req[k] !== null)
  if (kinds.length === 0) return 'One of request.site or request.app or request.dooh must be defined'
  if (kinds.length >= 2) return 'No more than one of request.site or request.app or request.dooh can be defined'
  if (!Array.isArray(req.imp) || req.imp.length === 0) return 'request.imp must contain at least one element.'
  const seen = new Set<string>()
  for (const [i, imp] of (req.imp as Json[]).entries()) {
    if (typeof imp.id !== 'string' || imp.id === '') return `request.imp[${i}] missing required field: "id"`
    if (seen.has(imp.id)) return `request.imp[${i}].id and request.imp[*].id must be unique. "${imp.id}" is used more than once.`
    seen.add(imp.id)
    if (imp.banner === undefined && imp.video === undefined && imp.audio === undefined && imp.native === undefined) return `request.imp[${i}] must contain at least one of "banner", "video", "audio", or "native"`
    if (imp.banner !== undefined && !(imp.banner.w > 0 && imp.banner.h > 0) && !(Array.isArray(imp.banner.format) && imp.banner.format.length > 0)) return `request.imp[${i}].banner has no sizes. Define "w" and "h", or include "format" elements.`
    if (imp.video !== undefined && !(Array.isArray(imp.video.mimes) && imp.video.mimes.length > 0)) return `request.imp[${i}].video.mimes must contain at least one supported MIME type`
    if (imp.bidfloor !== undefined && imp.bidfloor < 0) return `request.imp[${i}].bidfloor must be a positive number`
    if (imp.bidfloorcur !== undefined && !/^[A-Z]{3}$/.test(imp.bidfloorcur)) return `request.imp[${i}].bidfloorcur must be an ISO-4217 currency code`
  }
  const geo = req.device?.geo
  if (geo !== undefined && geo.accuracy !== undefined && geo.accuracy < 0) return 'request.device.geo.accuracy must be a positive number'
  for (const list of ['bcat', 'badv'] as const) {
    if (req[list] !== undefined && !(Array.isArray(req[list]) && req[list].every((v: unknown) => typeof v === 'string'))) return `request.${list} must be an array of strings`
  }
  return undefined
}
