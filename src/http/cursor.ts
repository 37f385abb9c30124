import { ApiError } from '../errors.js'

// Opaque page cursors over keys ordered by (milliseconds, id): a seat's newest-first lists and its proofs.

/** The cursor that continues after an item at ms with id. */
export function encodeCursor (ms: number, id: string): string {
  return Buffer.from(JSON.stringify([ms, id])).toString('base64url')
}

/** The (ms, id) a cursor continues after; 400 invalid_parameter when it is not one this service issued. */
export function decodeCursor (cursor: string): [number, string] {
  try {
    const [ms, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString()) as unknown[]
    if (typeof ms === 'number' && typeof id === 'string') return [ms, id]
  } catch {}
  throw new ApiError('invalid_parameter', 'cursor is not valid.', { param: 'cursor' })
}
