import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** Where a generated operator token is kept. */
export function adminTokenPath (dataDir: string): string {
  return join(dataDir, 'admin-token')
}

/**
 * The operator token: ADMIN_TOKEN when set, else the one generated on first start into DATA_DIR/admin-token (mode
 * 0600), so `npm start` works with no setup and the CLI finds the token by itself.
 */
export function resolveAdminToken (configured: string | undefined, dataDir: string): { token: string, generatedAt?: string } {
  if (configured !== undefined) return { token: configured }
  const path = adminTokenPath(dataDir)
  if (existsSync(path)) return { token: readFileSync(path, 'utf8').trim(), generatedAt: path }
  const token = 'oohb_admin_' + randomBytes(24).toString('base64url')
  writeFileSync(path, token + '\n', { mode: 0o600, flag: 'wx' })
  return { token, generatedAt: path }
}
