import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

const VERSION = 'v1'

/** Reads a 32-byte key given as 64 hex characters or base64. */
function parseKey (text: string): Buffer {
  const key = /^[0-9a-f]{64}$/i.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64')
  if (key.length !== 32) throw new Error('KEY_ENCRYPTION_KEY must be 32 bytes, as 64 hex characters or base64')
  return key
}

/**
 * Seals API keys so that the service can sign legacy win/loss notifications with a seat's key (spec, Authentication
 * 6) while no key is stored in the clear: AES-256-GCM under a key-encryption key that never enters LMDB, with the
 * key id as associated data so a sealed value cannot be moved to another record. The key-encryption key comes from
 * KEY_ENCRYPTION_KEY (a secret manager's job in production) or is generated into DATA_DIR/secrets/key-encryption.key
 * (mode 0600) on first start: a copy of the LMDB file alone reveals no key.
 */
export class KeySealer {
  readonly #kek: Buffer

  constructor (kek: Buffer) {
    this.#kek = kek
  }

  /** The sealer for a configuration: the configured key, else the one kept under dataDir. */
  static open (configured: string | undefined, dataDir: string): KeySealer {
    if (configured !== undefined) return new KeySealer(parseKey(configured))
    const path = join(dataDir, 'secrets', 'key-encryption.key')
    if (!existsSync(path)) {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
      writeFileSync(path, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' })
    }
    return new KeySealer(parseKey(readFileSync(path, 'utf8').trim()))
  }

  /**
   * A 32-byte secret for another purpose, derived from the key-encryption key (HKDF-SHA256, the purpose as info): the
   * same on every node given the same key, and telling nothing of it.
   */
  derive (purpose: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.#kek, '', `oohbid ${purpose}`, 32))
  }

  /** The sealed form of a key, bound to its key id. */
  seal (keyId: string, key: string): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.#kek, iv)
    cipher.setAAD(Buffer.from(keyId))
    const body = Buffer.concat([cipher.update(key, 'utf8'), cipher.final()])
    return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`
  }

  /** The key back, or undefined when the value was sealed under another key-encryption key or tampered with. */
  open (keyId: string, sealed: string): string | undefined {
    const [version, data] = sealed.split('.', 2)
    if (version !== VERSION || data === undefined) return undefined
    const raw = Buffer.from(data, 'base64url')
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#kek, raw.subarray(0, 12))
      decipher.setAAD(Buffer.from(keyId))
      decipher.setAuthTag(raw.subarray(12, 28))
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')
    } catch {
      return undefined
    }
  }
}
