import { createPrivateKey, createPublicKey, randomBytes, sign, verify, type KeyObject } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { KeySealer } from '../auth/sealed-keys.js'
import type { Config } from '../config.js'
import type { SignedFields } from './records.js'

/** DER prefix of an Ed25519 PKCS#8 private key: these 16 bytes then the 32-byte seed (RFC 8410). */
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex')

/** The payload version proofs are signed under (spec, Proof verification). */
export const PROOF_VERSION = 'v2'


/** The exact text a proof signs: `v2.<timestamp>.<adId>.<impressionId>.<screenId>.<deviceId>`. */
export function proofPayload (f: SignedFields): string {
  return `${PROOF_VERSION}.${f.timestamp}.${f.adId}.${f.impressionId}.${f.screenId}.${f.deviceId}`
}

/**
 * Signs proofs of play with the service's Ed25519 key, with Node's native Ed25519 (OpenSSL), inline: about 36 us a
 * proof here, against 210-286 us for @noble/ed25519 and about 60 us for a piscina round trip alone, so a worker hop
 * would cost more than the signature (docs/architecture.md, "Where piscina runs"). The offline verifier checks the
 * signatures with @noble/ed25519, an independent implementation. The 32-byte seed is generated into
 * DATA_DIR/secrets/proof-signing.key (mode 0600) on first start and kept: buyers pin the public key, so it must
 * outlive restarts.
 */
export class ProofSigner {
  readonly #privateKey: KeyObject
  /** The public key, 32 bytes as 64 hex characters. */
  readonly publicKeyHex: string
  readonly #publicKey: KeyObject

  constructor (seed: Uint8Array) {
    this.#privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' })
    this.#publicKey = createPublicKey(this.#privateKey)
    // The SubjectPublicKeyInfo ends with the 32 raw key bytes.
    this.publicKeyHex = this.#publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('hex')
  }

  /**
   * The service's signer: on a cluster node the one every node derives from KEY_ENCRYPTION_KEY, so a proof signed by
   * any node verifies on every node against the one public key buyers pin; else the one kept under DATA_DIR.
   */
  static forService (config: Pick<Config, 'cluster' | 'keyEncryptionKey' | 'dataDir'>): ProofSigner {
    if (config.cluster === undefined) return ProofSigner.open(config.dataDir)
    return new ProofSigner(new Uint8Array(KeySealer.open(config.keyEncryptionKey, config.dataDir).derive('proof_signing')))
  }

  /** The signer whose seed is kept under dataDir, generated on first use. */
  static open (dataDir: string): ProofSigner {
    const path = join(dataDir, 'secrets', 'proof-signing.key')
    if (!existsSync(path)) {
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 })
      writeFileSync(path, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' })
    }
    const seed = Buffer.from(readFileSync(path, 'utf8').trim(), 'hex')
    if (seed.length !== 32) throw new Error(`${path} must hold a 32-byte Ed25519 seed as 64 hex characters`)
    return new ProofSigner(new Uint8Array(seed))
  }

  /** `ed25519=<hex>` over the proof payload. */
  sign (f: SignedFields): string {
    return `ed25519=${sign(null, Buffer.from(proofPayload(f)), this.#privateKey).toString('hex')}`
  }

  /** Whether signature is this key's over the fields; anything malformed is simply not valid. */
  verify (signature: string, f: SignedFields): boolean {
    const m = /^ed25519=([0-9a-f]{128})$/i.exec(signature)
    if (m === null) return false
    return verify(null, Buffer.from(proofPayload(f)), this.#publicKey, Buffer.from(m[1]!, 'hex'))
  }
}
