import { CalibrateContentResponseSchema, CreatePropertyListResponseSchema, DeletePropertyListResponseSchema, GetContentStandardsResponseSchema, GetPropertyListResponseSchema, ListContentStandardsResponseSchema, ListPropertyListsResponseSchema, UpdatePropertyListResponseSchema, ValidateContentDeliveryResponseSchema } from '@adcp/client'
import t from 'tap'
import { tool, market, DAY } from './helpers/agents.js'
import { assetServer } from './helpers/asset-server.js'
import { uploadedCreative } from './helpers/creatives.js'
import { adImage } from './helpers/media.js'
import { startTestService } from './helpers/service.js'

// AI buying agents over MCP (test/helpers/agents.ts): governance: property lists and content standards.

// One service and one market for the file (its assets may be served from loopback): each test has seats of its own.
const svc = await startTestService(t, { ALLOW_PRIVATE_ASSET_URLS: 'true' })
const { partner, screens } = await market(svc)

t.test('property lists: kept per seat, resolved to screens, narrowing products and packages; shared by auth_token; refused inputs write nothing', async (t) => {
  const { key } = await svc.onboard('list_owner')
  const { key: other } = await svc.onboard('list_guest')
  const agentUrl = `${svc.url}/mcp`
  const domain = `${partner.slug}.example`

  const before = svc.snapshot()
  t.match(await tool(svc, key, 'create_property_list', { description: 'no name' }), { error: true, data: { errors: [{ code: 'missing_required_field', field: 'name' }] } })
  t.match(await tool(svc, key, 'create_property_list', { name: 'x', base_properties: [{ selection_type: 'by_magic' }] }), { error: true, data: { errors: [{ field: /^base_properties/ }] } }, 'an unknown selection_type')
  t.match(await tool(svc, key, 'get_property_list', { list_id: 'pl_nope' }), { error: true, data: { errors: [{ code: 'property_list_not_found', field: 'list_id' }] } })
  t.match(await tool(svc, key, 'get_products', { brief: 'gyms in Austin', property_list: { agent_url: 'https://governance.example/mcp', list_id: 'pl_1' } }), { error: true, data: { errors: [{ code: 'unsupported_feature', field: 'property_list.agent_url' }] } }, 'another agent\'s list is not fetched')
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'refusals write nothing')

  // Austin's screens with a floor of $11 or more (gym-3 to gym-6 and the airport), gym-4 kept out by its operator's id; a web filter kept as given.
  const made = await tool(svc, key, 'create_property_list', {
    name: 'Premium Austin gyms',
    base_properties: [{ selection_type: 'publisher_tags', publisher_domain: domain, tags: ['austin'] }],
    filters: { countries_all: ['US'], exclude_identifiers: [{ type: 'venue_id', value: 'gym-4' }], feature_requirements: [{ feature_id: 'floor_cpm', min_value: 11 }], garm_categories: { exclude: ['adult'] } },
    brand: { domain: 'acme.example' },
    context: { trace: 'pl-1' }
  })
  t.equal(made.error, false, JSON.stringify(made.data))
  t.ok(CreatePropertyListResponseSchema.safeParse(made.data).success, 'create_property_list answers AdCP\'s schema')
  const listId = made.data.list.list_id as string
  t.match(made.data, { list: { list_id: /^pl_/, name: 'Premium Austin gyms', principal: 'list_owner' }, auth_token: /^plt_/, context: { trace: 'pl-1' } })
  const ref = { agent_url: agentUrl, list_id: listId }

  const resolved = await tool(svc, key, 'get_property_list', { list_id: listId, pagination: { max_results: 2 } })
  t.ok(GetPropertyListResponseSchema.safeParse(resolved.data).success, 'get_property_list answers AdCP\'s schema')
  const gyms = ['gym-3', 'gym-5', 'gym-6'].map((d) => screens[d]!).sort()
  const kept = [...gyms, screens['airport-1']!].sort()
  t.match(resolved.data, { list: { property_count: 4, filters: { garm_categories: { exclude: ['adult'] } } }, pagination: { has_more: true, total_count: 4, cursor: String }, ext: { oohbid: { filters_not_applied: ['garm_categories'] } } })
  const rest = await tool(svc, key, 'get_property_list', { list_id: listId, pagination: { max_results: 2, cursor: resolved.data.pagination.cursor } })
  t.same([...resolved.data.identifiers, ...rest.data.identifiers], kept.map((id) => ({ type: 'screen_id', value: id })), 'two pages: the four screens it keeps, by screen_id')
  t.equal(rest.data.pagination.has_more, false)
  const gaps = await tool(svc, key, 'create_property_list', { name: 'With gaps', base_properties: [{ selection_type: 'identifiers', identifiers: [{ type: 'screen_id', value: screens['airport-1'] }, { type: 'domain', value: 'example.com' }, { type: 'ios_bundle', value: 'com.example' }] }] })
  t.match((await tool(svc, key, 'get_property_list', { list_id: gaps.data.list.list_id })).data, { list: { property_count: 1 }, coverage_gaps: { domain: [{ value: 'example.com' }], ios_bundle: [{ value: 'com.example' }] } }, 'identifiers naming no screen here are coverage gaps')
  const legacy = await tool(svc, key, 'create_property_list', { name: 'AdCP 2 form', base_properties: { include: [{ identifier_type: 'openooh_venue_type', identifier_value: 'gym' }], exclude: [{ identifier_type: 'venue_id', identifier_value: 'gym-dallas' }] } })
  t.match(legacy.data.list, { base_properties: [{ selection_type: 'identifiers', identifiers: [{ type: 'openooh_venue_type', value: 'gym' }] }], filters: { exclude_identifiers: [{ type: 'venue_id', value: 'gym-dallas' }] } }, 'AdCP 2\'s {include, exclude} read as a source and exclusions')
  t.equal((await tool(svc, key, 'get_property_list', { list_id: legacy.data.list.list_id, resolve: true })).data.list.property_count, 6, 'every gym but Dallas\'s')

  const products = async (k: string, list?: Record<string, unknown>) => (await tool(svc, k, 'get_products', { brief: 'gyms in Austin', ...(list !== undefined ? { property_list: list } : {}) })).data
  t.same((await products(key)).products.map((p: { ext: { oohbid: { screens: number } } }) => p.ext.oohbid.screens), [6, 6, 6])
  const narrowed = await products(key, ref)
  t.same(narrowed.products.map((p: { ext: { oohbid: { screens: number } } }) => p.ext.oohbid.screens), [3, 3, 3], 'with the list each product shows only its three screens')
  t.equal(narrowed.property_list_applied, true)
  t.same(narrowed.products[0].publisher_properties[0].property_ids.sort(), gyms)

  const buy = async (k: string, overlay: Record<string, unknown>, product = narrowed.products[1].product_id) => await tool(svc, k, 'create_media_buy', { buyer_ref: `listed-${Math.random()}`, start_time: 'asap', end_time: new Date(svc.clock.now() + 7 * DAY).toISOString(), packages: [{ product_id: product, pricing_option_id: 'cpm_fixed', budget: 500, targeting_overlay: overlay }] })
  const bought = await buy(key, { property_list: ref })
  t.equal(bought.error, false, JSON.stringify(bought.data))
  t.match(bought.data.packages[0], { targeting_overlay: { property_list: ref }, ext: { oohbid: { screens: 3 } } }, 'the package plays only on the list\'s screens')
  const none = await tool(svc, key, 'create_property_list', { name: 'Airports only', base_properties: [{ selection_type: 'identifiers', identifiers: [{ type: 'openooh_venue_type', value: 'airport' }] }] })
  const mid = svc.snapshot()
  t.match(await buy(key, { property_list: { agent_url: agentUrl, list_id: none.data.list.list_id } }), { error: true, data: { errors: [{ code: 'validation_failed', field: 'packages.0.targeting_overlay.property_list' }] } }, 'a list that keeps none of the product\'s screens')
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...mid, outbox: 0, audit: 0 }, 'and nothing is bought')

  // Another seat uses the list only with its auth_token, and cannot change it.
  t.match(await tool(svc, other, 'get_property_list', { list_id: listId }), { error: true, data: { errors: [{ code: 'property_list_not_found' }] } }, 'another seat\'s list without its token')
  t.equal((await tool(svc, other, 'get_property_list', { list_id: listId, auth_token: made.data.auth_token })).data.list.property_count, 4, 'shared by its token')
  t.same((await products(other, { ...ref, auth_token: made.data.auth_token })).products.map((p: { ext: { oohbid: { screens: number } } }) => p.ext.oohbid.screens), [3, 3, 3], 'and used in get_products')
  t.match(await tool(svc, other, 'update_property_list', { list_id: listId, auth_token: made.data.auth_token, name: 'mine now' }), { error: true, data: { errors: [{ code: 'not_authorized' }] } }, 'but not changed')
  t.match(await tool(svc, key, 'get_property_list', { list_id: listId, auth_token: 'plt_wrong' }), { error: true, data: { errors: [{ code: 'not_authorized', field: 'auth_token' }] } }, 'a wrong token is refused even for the owner')

  const updated = await tool(svc, key, 'update_property_list', { list_id: listId, auth_token: made.data.auth_token, filters: { feature_requirements: [{ feature_id: 'floor_cpm', min_value: 13 }] } })
  t.ok(UpdatePropertyListResponseSchema.safeParse(updated.data).success)
  t.match(updated.data.list, { name: 'Premium Austin gyms', filters: { feature_requirements: [{ min_value: 13 }] } })
  t.equal((await tool(svc, key, 'get_property_list', { list_id: listId })).data.list.property_count, 2, 'gym-5 and gym-6 now')
  const listed = await tool(svc, key, 'list_property_lists', { name_contains: 'premium' })
  t.ok(ListPropertyListsResponseSchema.safeParse(listed.data).success)
  t.same(listed.data.lists.map((l: { list_id: string }) => l.list_id), [listId])
  t.equal((await tool(svc, key, 'list_property_lists', {})).data.lists.length, 4)
  t.equal((await tool(svc, other, 'list_property_lists', {})).data.lists.length, 0, 'each seat lists its own')

  const deleted = await tool(svc, key, 'delete_property_list', { list_id: listId })
  t.ok(DeletePropertyListResponseSchema.safeParse(deleted.data).success)
  t.same(deleted.data, { deleted: true, list_id: listId })
  t.match(await tool(svc, key, 'get_property_list', { list_id: listId }), { error: true, data: { errors: [{ code: 'property_list_not_found' }] } }, 'gone')
  t.match((await tool(svc, key, 'get_media_buys', { media_buy_ids: [bought.data.media_buy_id] })).data.media_buys[0].packages[0], { ext: { oohbid: { screens: 3 } } }, 'the package bought on it keeps its screens')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('content standards: the moderation policy, and calibration answered by the classifiers that moderate creatives', async (t) => {
  const { key } = await svc.onboard('standards_reader')
  const listed = await tool(svc, key, 'list_content_standards', { channels: ['dooh'] })
  t.ok(ListContentStandardsResponseSchema.safeParse(listed.data).success, 'list_content_standards answers AdCP\'s schema')
  t.match(listed.data.standards, [{ standards_id: 'oohbid_creative_policy', channels_any: ['dooh'], policy: /Rejected: adult content .* Held for human review: .* Allowed and flagged: alcohol/ }])
  t.same((await tool(svc, key, 'list_content_standards', { channels: ['podcast'] })).data.standards, [], 'none for podcasts')
  const got = await tool(svc, key, 'get_content_standards', { standards_id: 'oohbid_creative_policy' })
  t.ok(GetContentStandardsResponseSchema.safeParse(got.data).success)
  t.match(await tool(svc, key, 'get_content_standards', { standards_id: 'brand_x' }), { error: true, data: { errors: [{ code: 'content_standards_not_found', field: 'standards_id' }] } })
  t.match(await tool(svc, key, 'calibrate_content', { standards_id: 'oohbid_creative_policy' }), { error: true, data: { errors: [{ code: 'missing_required_field', field: 'artifact' }] } })

  const calibrate = async (artifact: Record<string, unknown>) => (await tool(svc, key, 'calibrate_content', { standards_id: 'oohbid_creative_policy', artifact: { property_id: { type: 'domain', value: 'example.com' }, ...artifact } })).data
  const beer = await calibrate({ artifact_id: 'beer', assets: [{ type: 'text', role: 'title', content: 'Ice cold beer at happy hour' }] })
  t.ok(CalibrateContentResponseSchema.safeParse(beer).success, 'calibrate_content answers AdCP\'s schema')
  t.match(beer, { verdict: 'pass', features: [{ feature_id: 'adult_content', status: 'passed' }] }, 'alcohol passes')
  t.match(beer.features.find((f: { feature_id: string }) => f.feature_id === 'alcohol'), { status: 'warning', explanation: /allowed and flagged/ }, 'flagged, as moderation flags it')
  t.match(await calibrate({ artifact_id: 'vote', assets: [{ type: 'text', content: 'Vote for Smith for mayor' }] }), { verdict: 'fail', explanation: /held for human review: political content/ })
  const violent = await calibrate({ artifact_id: 'war', assets: [{ type: 'video', url: 'https://assets.invalid/war.mp4', transcript: 'a bloody massacre' }] })
  t.match(violent, { verdict: 'fail', explanation: /Would be rejected: violence.*could not be fetched/ }, 'a transcript is read; an asset that cannot be fetched is said so')

  // The same image as a creative and as content: moderation's decision and calibration's verdict agree.
  const png = await adImage('Fresh Coffee', 'Every Morning')
  const base = await assetServer(t, { '/coffee.png': { body: png, type: 'image/png' } })
  const creative = await uploadedCreative(svc, key, png, 'Coffee')
  const judged = await calibrate({ artifact_id: 'coffee', assets: [{ type: 'image', url: `${base}/coffee.png` }] })
  t.equal(creative.status, 'approved', 'moderation approves the image as a creative')
  t.match(judged, { verdict: 'pass', confidence: Number }, 'and calibration passes it')
  t.ok(judged.confidence > 0.5, `with the image models' confidence (${judged.confidence})`)

  const validated = await tool(svc, key, 'validate_content_delivery', { standards_id: 'oohbid_creative_policy', records: [{ record_id: 'r-1', artifact: { artifact_id: 'a', assets: [{ type: 'text', content: 'Fresh coffee' }] } }, { record_id: 'r-2', artifact: { artifact_id: 'b', assets: [{ type: 'text', content: 'xxx porn' }] } }], feature_ids: ['adult_content'] })
  t.ok(ValidateContentDeliveryResponseSchema.safeParse(validated.data).success, 'validate_content_delivery answers AdCP\'s schema')
  t.same(validated.data.summary, { total_records: 2, passed_records: 1, failed_records: 1 })
  t.match(validated.data.results, [{ record_id: 'r-1', verdict: 'pass', features: [{ feature_id: 'adult_content', status: 'passed' }] }, { record_id: 'r-2', verdict: 'fail', features: [{ feature_id: 'adult_content', status: 'failed' }] }])
  t.equal(validated.data.results[0].features.length, 1, 'only the features asked for')
  t.equal((await tool(svc, key, 'validate_content_delivery', { records: [{ record_id: 'r-1', artifact: { artifact_id: 'a', title: 'Fresh coffee' } }], include_passed: false })).data.results.length, 0, 'passed records left out when asked')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})
