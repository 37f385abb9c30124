import { ListCreativesResponseSchema } from '@adcp/client'
import t from 'tap'
import { tool, market, gymProduct, approveSynced, DAY, MONDAY_9AM_AUSTIN } from './helpers/agents.js'
import { approvedCreative, unapprovedCreative } from './helpers/creatives.js'
import { startTestService } from './helpers/service.js'

// AI buying agents over MCP (test/helpers/agents.ts): list_creatives, and creatives in rotation: weights, versions
// moderated again while the approved one plays.

t.test('list_creatives: every creative of the seat, however registered, with its moderation and packages; filtered, sorted, paged', async (t) => {
  const svc = await startTestService(t)
  await market(svc)
  const { key } = await svc.onboard('librarian')
  const other = (await svc.onboard('neighbour')).key
  const products = (await tool(svc, key, 'get_products', { brief: 'gyms in Austin' })).data.products
  const buy = await tool(svc, key, 'create_media_buy', { buyer_ref: 'spring', brand: { domain: 'librarian.example' }, start_time: 'asap', end_time: new Date(svc.clock.now() + 7 * DAY).toISOString(), packages: [{ buyer_ref: 'gyms', product_id: products[0].product_id, pricing_option_id: 'cpm_fixed', budget: 500 }] })
  t.equal(buy.error, false, JSON.stringify(buy.data))
  const mediaBuyId = buy.data.media_buy_id as string
  svc.clock.advance(1000)
  const approvedId = await approvedCreative(svc, key, 'Approved through REST')
  svc.clock.advance(1000)
  const waitingId = await unapprovedCreative(svc, key)
  svc.clock.advance(1000)
  const synced = await tool(svc, key, 'sync_creatives', {
    creatives: [{ creative_id: 'lib-a', name: 'Library A', format_id: 'dooh_1920x1080_15s', assets: { primary: { url: 'https://assets.invalid/a.png', format: 'png', width: 1920, height: 1080 } } }],
    assignments: { 'lib-a': [`${mediaBuyId}/pkg-0`] }
  })
  t.equal(synced.error, false)
  svc.clock.advance(1000)
  t.equal((await tool(svc, key, 'sync_creatives', { creatives: [{ creative_id: 'lib-b', name: 'Library B', assets: { primary: { url: 'https://assets.invalid/b.png', format: 'png' } } }] })).error, false)
  await svc.service.moderator.idle()
  await approvedCreative(svc, other, 'Another seat\'s')

  const all = await tool(svc, key, 'list_creatives', { context: { trace: 'l-1' } })
  t.equal(all.error, false)
  t.ok(ListCreativesResponseSchema.safeParse(all.data).success, 'list_creatives answers AdCP\'s schema')
  t.same(all.data.creatives.map((c: { creative_id: string }) => c.creative_id), ['lib-b', 'lib-a', waitingId, approvedId], 'the seat\'s four, newest first, by the buyer\'s creative_id where it synced one; not the other seat\'s')
  t.match(all.data, { query_summary: { total_matching: 4, returned: 4, filters_applied: [], sort_applied: { field: 'created_date', direction: 'desc' } }, pagination: { has_more: false, total_count: 4 }, status_summary: { approved: 1, rejected: 2, processing: 1, pending_review: 0 }, context: { trace: 'l-1' } })
  const [b, a, waiting, approved] = all.data.creatives
  t.match(a, { name: 'Library A', status: 'rejected', format_id: { id: 'dooh', agent_url: `${svc.url}/mcp` }, assignments: { assignment_count: 1, assigned_packages: [{ package_id: 'pkg-0', buyer_ref: 'gyms', assigned_date: String }] }, ext: { oohbid: { platform_id: synced.data.creatives[0].platform_id, moderation_status: 'rejected', rejection_reason: /could not be fetched/ } } }, 'a rejected creative says why, and which package names it')
  t.match(b, { status: 'rejected', assignments: { assignment_count: 0, assigned_packages: [] } })
  t.match(waiting, { status: 'processing', ext: { oohbid: { moderation_status: 'awaiting_upload' } } }, 'an upload not yet made is processing')
  t.match(approved, { status: 'approved', name: 'Approved through REST' })
  t.notOk('rejection_reason' in approved.ext.oohbid)

  const ids = async (args: Record<string, unknown>) => {
    const r = await tool(svc, key, 'list_creatives', args)
    if (r.error) t.fail(JSON.stringify(r.data))
    return r.data.creatives.map((c: { creative_id: string }) => c.creative_id)
  }
  t.same(await ids({ filters: { statuses: ['rejected'] } }), ['lib-b', 'lib-a'])
  t.same(await ids({ filters: { statuses: ['approved', 'processing'] } }), [waitingId, approvedId])
  t.same(await ids({ filters: { name_contains: 'library' } }), ['lib-b', 'lib-a'], 'name_contains ignores case')
  t.same(await ids({ filters: { creative_ids: ['lib-a', approvedId, 'nobody'] } }), ['lib-a', approvedId], 'by the buyer\'s id or the platform\'s')
  t.same(await ids({ filters: { media_buy_ids: [mediaBuyId] } }), ['lib-a'])
  t.same(await ids({ filters: { buyer_refs: ['spring'] } }), ['lib-a'])
  t.same(await ids({ filters: { assigned_to_packages: ['gyms'] } }), ['lib-a'], 'a package by its buyer_ref')
  t.same(await ids({ filters: { unassigned: true, statuses: ['rejected'] } }), ['lib-b'], 'filters combine')
  t.same(await ids({ filters: { format_types: ['video'] } }), [])
  t.same(await ids({ filters: { created_before: all.data.creatives[1].created_date } }), [waitingId, approvedId])
  t.same(await ids({ filters: { created_after: all.data.creatives[1].created_date } }), ['lib-b'], 'the bounds are exclusive')
  t.same(await ids({ sort: { field: 'name', direction: 'asc' } }), [approvedId, 'lib-a', 'lib-b', waitingId], 'by name: Approved, Library A, Library B, Not yet')
  t.equal((await ids({ sort: { field: 'assignment_count' } }))[0], 'lib-a', 'the assigned one first')
  t.equal((await ids({ sort: { field: 'assignment_count', direction: 'asc' } }))[3], 'lib-a', 'and last, ascending')
  t.same((await ids({ sort: { field: 'created_date', direction: 'asc' } })).slice(0, 2), [approvedId, waitingId], 'oldest first')

  const pages: string[] = []
  let cursor: string | undefined
  for (let i = 0; i < 5; i++) {
    const r = await tool(svc, key, 'list_creatives', { pagination: { max_results: 3, ...(cursor !== undefined ? { cursor } : {}) } })
    pages.push(...r.data.creatives.map((c: { creative_id: string }) => c.creative_id))
    if (i === 0) {
      t.match(r.data.pagination, { has_more: true, total_count: 4, cursor: String })
      // A creative synced between pages is newer than the cursor: the next page neither repeats nor skips one.
      svc.clock.advance(1000)
      await tool(svc, key, 'sync_creatives', { creatives: [{ creative_id: 'lib-c', name: 'Library C', assets: { primary: { url: 'https://assets.invalid/c.png', format: 'png' } } }] })
    }
    cursor = r.data.pagination.cursor
    if (r.data.pagination.has_more !== true) break
  }
  t.same(pages, ['lib-b', 'lib-a', waitingId, approvedId], 'three, then the last one, whatever was synced meanwhile')

  const before = svc.snapshot()
  t.match(await tool(svc, key, 'list_creatives', { pagination: { cursor: 'not-a-cursor' } }), { error: true, data: { errors: [{ code: 'invalid_parameter', field: 'pagination.cursor' }] } })
  t.match(await tool(svc, key, 'list_creatives', { filters: { statuses: ['lost'] } }), { error: true, data: { errors: [{ message: /statuses/ }] } })
  t.match(await tool(svc, key, 'list_creatives', { filters: { created_after: 'yesterday' } }), { error: true, data: { errors: [{ field: 'filters.created_after' }] } })
  t.match(await tool(svc, key, 'list_creatives', { pagination: { max_results: 0 } }), { error: true })
  t.match(await tool(svc, key, 'list_creatives', { account: { account_id: 'neighbour' } }), { error: true, data: { errors: [{ code: 'not_authorized' }] } })
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'refusals write nothing but the audit trail')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})

t.test('inline creatives rotate by weight on the screens; a creative_id synced with a new asset is a new version, moderated again while the approved one plays', async (t) => {
  // Monday 09:00 in Austin: the gyms are open.
  const svc = await startTestService(t, { PICKUP_SECONDS: '5' }, { at: MONDAY_9AM_AUSTIN })
  const { embedOf, screens } = await market(svc)
  const { key } = await svc.onboard('rotation_buyer')
  const preferred = await gymProduct(svc, key, 'preferred')
  const pkg = (creatives: unknown[]) => ({ buyer_ref: 'rotating', product_id: preferred, pricing_option_id: 'cpm_fixed', budget: 2000, pacing: 'asap', creatives })
  const spotA = { name: 'Spot A', format_id: 'dooh_1920x1080_15s', assets: { primary: { url: 'https://assets.invalid/a.png' } }, weight: 3 }
  const spotB = { creative_id: 'spot-b', name: 'Spot B', assets: { primary: { url: 'https://assets.invalid/b.png' } } }
  const flight = { start_time: 'asap', end_time: new Date(svc.clock.now() + 7 * DAY).toISOString() }

  const before = svc.snapshot()
  t.match(await tool(svc, key, 'create_media_buy', { buyer_ref: 'bad', ...flight, packages: [pkg([spotA, { ...spotB, assets: { primary: { url: 'ftp://assets.invalid/b.png' } } }])] }), { error: true, data: { errors: [{ code: 'invalid_parameter', field: 'packages.0.creatives.1' }] } }, 'one bad inline creative refuses the buy')
  t.match(await tool(svc, key, 'create_media_buy', { buyer_ref: 'bad', ...flight, packages: [{ ...pkg([spotA]), creative_assignments: [{ creative_id: 'spot-b', weight: -1 }] }] }), { error: true, data: { errors: [{ field: 'packages.0.creative_assignments.0.weight' }] } }, 'a negative weight')
  t.match(await tool(svc, key, 'sync_creatives', { creatives: [{ name: 'No id', assets: { primary: { url: 'https://assets.invalid/c.png' } } }] }), { error: true, data: { errors: [{ code: 'missing_required_field', field: 'creatives.0.creative_id' }] } }, 'sync_creatives needs the buyer\'s creative_id; only inline creatives may go without')
  t.same({ ...svc.snapshot(), outbox: 0, audit: 0 }, { ...before, outbox: 0, audit: 0 }, 'refusals write nothing')

  const made = await tool(svc, key, 'create_media_buy', { buyer_ref: 'rotation', ...flight, packages: [pkg([spotA, spotB])] })
  t.equal(made.error, false, JSON.stringify(made.data))
  const inlineId = made.data.packages[0].creative_assignments[0].creative_id as string
  t.match(made.data.packages[0].creative_assignments, [{ creative_id: /^inline_[0-9a-f]{16}$/, weight: 3 }, { creative_id: 'spot-b', weight: 1 }], 'an inline creative without an id gets one; B takes the default weight')
  const later = { start_time: new Date(svc.clock.now() + 2 * DAY).toISOString(), end_time: flight.end_time }
  t.same((await tool(svc, key, 'create_media_buy', { buyer_ref: 'rotation-later', ...later, packages: [pkg([spotA])] })).data.packages[0].creative_assignments, [{ creative_id: inlineId, weight: 3 }], 'the same inline creative in another buy is the same creative')
  t.equal((await tool(svc, key, 'list_creatives', {})).data.creatives.length, 2, 'two creatives registered, not three')
  t.equal(made.data.status, 'pending_activation', 'the buy waits for moderation')

  // The assets cannot be fetched, so moderation rejects both at once; the operator overturns that.
  await approveSynced(svc, key)
  const placement = (await svc.request('GET', '/openrtb/v2/assignments', { key })).body.data.assignments.find((a: { line: string, rotation?: unknown[] }) => a.line === 'preferred' && a.rotation?.length === 2)
  t.ok(placement !== undefined, 'the placement rotates between the two')
  svc.clock.advance(10_000)
  const [idA, idB] = (placement.rotation as Array<{ creative_id: string }>).map((r) => r.creative_id)
  /** Which creative each of n spots at gym-1 plays. */
  const plays = async (n: number) => {
    const got: string[] = []
    for (let i = 0; i < n; i++) got.push((await svc.request('POST', `${embedOf(screens['gym-1']!)}/spots`, { body: {} })).body.data.creative?.creative_id)
    return got
  }
  const first = await plays(40)
  const count = (ids: string[], id: string | undefined) => ids.filter((x) => x === id).length
  t.same([count(first, idA), count(first, idB)], [31, 9], '40 spots at 3:1: A plays 31, B 9')
  t.ok(first.slice(0, 8).includes(idB!), 'interleaved: B plays within the first eight spots')

  const resynced = await tool(svc, key, 'sync_creatives', { creatives: [{ ...spotB, assets: { primary: { url: 'https://assets.invalid/b-v2.png' } } }] })
  t.match(resynced.data.creatives, [{ creative_id: 'spot-b', action: 'updated', status: 'pending_review', warnings: [/Version 2 .* version 1 plays until it is approved/] }], 'the new asset is version 2, sent to moderation')
  const v2 = resynced.data.creatives[0].platform_id as string
  t.not(v2, idB, 'a creative of its own')
  await svc.service.moderator.idle()
  const listed = (await tool(svc, key, 'list_creatives', { filters: { creative_ids: ['spot-b'] } })).data.creatives
  t.match(listed, [{ creative_id: 'spot-b', status: 'rejected', ext: { oohbid: { platform_id: v2, version: 2, playing_version: 1, playing_platform_id: idB } } }], 'listed once, as version 2: moderation turned it down and version 1 plays on')
  t.same(count(await plays(8), idB), 2, 'version 1 keeps its share')
  t.equal((await tool(svc, key, 'sync_creatives', { creatives: [{ ...spotB, assets: { primary: { url: 'https://assets.invalid/b-v2.png' } } }] })).data.creatives[0].action, 'unchanged', 'the same asset again changes nothing')
  await svc.admin('POST', `/admin/v1/creatives/${v2}/review`, { decision: 'approved', reason: 'checked for the test' })
  const after = await plays(8)
  t.same([count(after, v2) + count(after, idA), count(after, idB)], [8, 0], 'approved: version 1 plays no more')
  t.ok(count(after, v2) > 0, `version 2 plays in its place (${count(after, v2)} of 8 spots)`)
  t.notOk('playing_version' in (await tool(svc, key, 'list_creatives', { filters: { creative_ids: ['spot-b'] } })).data.creatives[0].ext.oohbid)

  const reweighted = await tool(svc, key, 'update_media_buy', { media_buy_id: made.data.media_buy_id, packages: [{ package_id: 'pkg-0', creative_assignments: [{ creative_id: inlineId, weight: 0 }, { creative_id: 'spot-b', weight: 1 }] }] })
  t.match(reweighted.data.affected_packages, [{ creative_assignments: [{ creative_id: inlineId, weight: 0 }, { creative_id: 'spot-b', weight: 1 }] }])
  t.same(count(await plays(10), v2), 10, 'A at weight 0 stays attached and stops playing: B plays every spot')
  t.equal((await svc.request('GET', '/healthz')).status, 200, 'still serving')
})
