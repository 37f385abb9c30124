import type { TestService } from './service.js'

/**
 * An approved creative, made the fast way a real operator could: a URL-mode creative whose asset is missing is
 * rejected at once (no model run), then approved on review.
 */
export async function approvedCreative (svc: TestService, key: string, name = 'Approved ad'): Promise<string> {
  const r = await svc.request('POST', '/openrtb/v2/creatives', { key, body: { name, content_type: 'image/png', creative_url: 'https://assets.invalid/ad.png' } })
  if (r.status !== 201) throw new Error(r.text)
  const id = r.body.data.creative_id as string
  await svc.service.moderator.idle()
  const review = await svc.admin('POST', `/admin/v1/creatives/${id}/review`, { decision: 'approved', reason: 'checked by hand for the test' })
  if (review.body.data?.status !== 'approved') throw new Error(review.text)
  return id
}

/** A creative still awaiting its upload (so not approved). */
export async function unapprovedCreative (svc: TestService, key: string): Promise<string> {
  const r = await svc.request('POST', '/openrtb/v2/creatives', { key, body: { name: 'Not yet', content_type: 'image/png', mode: 'upload' } })
  return r.body.data.creative_id as string
}

/**
 * A creative uploaded the way a buyer uploads one (presigned PUT, confirm) and moderated by the real models; returns
 * its id and the status moderation gave it.
 */
export async function uploadedCreative (svc: TestService, key: string, bytes: Buffer, name: string, extra: Record<string, unknown> = {}, contentType = 'image/png'): Promise<{ id: string, status: string }> {
  const r = await svc.request('POST', '/openrtb/v2/creatives', { key, body: { name, content_type: contentType, mode: 'upload', ...extra } })
  if (r.status !== 201) throw new Error(r.text)
  const id = r.body.data.creative_id as string
  const put = await fetch(r.body.data.upload.url, { method: 'PUT', headers: { 'content-type': contentType }, body: bytes })
  if (put.status !== 200) throw new Error(`upload: ${put.status}`)
  await svc.request('POST', `/openrtb/v2/creatives/${id}/confirm`, { key })
  await svc.service.moderator.idle()
  const c = await svc.request('GET', `/openrtb/v2/creatives/${id}`, { key })
  return { id, status: c.body.data.status }
}
