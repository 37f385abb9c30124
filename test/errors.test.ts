import t from 'tap'
import { ApiError, errorTable, statusOf } from '../src/errors.js'

// The spec's Errors table, restated here as the expectation the code is checked against.
const SPEC: Record<string, number> = {
  authentication_required: 401, not_authorized: 403, missing_scope: 403, missing_required_field: 400, missing_name: 400,
  missing_content_type: 400, missing_creative_id: 400, missing_floor_cpm: 400, missing_screen_ids: 400, missing_asset_url: 400,
  missing_deal_id: 400, invalid_email: 400, invalid_seat_id: 400, invalid_screen: 400, invalid_budget: 400, invalid_date: 400,
  invalid_webhook_url: 400, invalid_verification_tier: 400, invalid_bid_response: 400, invalid_events: 400,
  seat_id_already_registered: 409, already_exists: 409, deal_already_exists: 409, not_found: 404, creative_not_found: 404,
  screen_not_found: 404, reservation_not_found: 404, deal_not_found: 404, webhook_not_found: 404, expired: 410,
  rate_limited: 429, api_key_provisioning_failed: 500, internal_error: 500, unspecified_error: 500
}

t.test('every code of the spec\'s table exists with its status', async (t) => {
  for (const [code, status] of Object.entries(SPEC)) t.equal(statusOf(code as never), status, code)
})

t.test('codes are snake_case and unique; 415 and 422 have codes of their own', async (t) => {
  const codes = errorTable().map((e) => e.code)
  t.equal(new Set(codes).size, codes.length)
  for (const c of codes) t.match(c, /^[a-z][a-z0-9_]*$/)
  t.equal(statusOf('unsupported_media_type'), 415)
  t.equal(statusOf('validation_failed'), 422)
  const err = new ApiError('missing_scope', undefined, { required_scope: 'bid:write', granted_scopes: [] })
  t.match(err, { status: 403, type: 'permission_error', message: String })
})
