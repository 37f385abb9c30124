import { ApiError } from '../errors.js'

/** The query parameters of cursor-paginated operator lists, for OpenAPI. */
export const pageQuery = [
  { name: 'limit', description: 'Items per page, 1-200 (default 50).', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
  { name: 'cursor', description: 'cursor.next of the previous page.', schema: { type: 'string' } }
]

/** Reads limit and cursor; the cursor is the base64url of the last key of the previous page. */
export function pageParams (query: URLSearchParams): { limit: number, after: string | undefined } {
  const rawLimit = query.get('limit')
  const limit = rawLimit === null ? 50 : Number(rawLimit)
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new ApiError('invalid_parameter', 'limit must be an integer from 1 to 200.', { param: 'limit' })
  const cursor = query.get('cursor')
  if (cursor === null || cursor === '') return { limit, after: undefined }
  const after = Buffer.from(cursor, 'base64url').toString('utf8')
  if (after.length === 0) throw new ApiError('invalid_parameter', 'cursor is not valid.', { param: 'cursor' })
  return { limit, after }
}
