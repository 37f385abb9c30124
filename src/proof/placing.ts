import { ApiError } from '../errors.js'
import { held, type Result } from '../http/route.js'
import { placeProof, repeatHere, type ProofEffects } from './chain.js'
import type { ProofCommand, ProofVerdict } from './records.js'

/** What a request answers now (a node alone) or once its plays' verdicts are in (a cluster node). */
export type Proved<T> = T | Promise<T>

/**
 * Places a request's signed plays in their screens' chains. A node alone places them in the request's transaction. A
 * cluster node answers a partner's repeat of a placed play itself (repeatHere), keeps the others pending in the
 * request's transaction, and proposes them to the proof log once it has committed, together (a few entries for a
 * partner's batch of 1,000); its answer waits for their verdicts. A verdict not known within the engine's
 * acknowledgement timeout is 503, and the node proposes the play again until it is placed (src/proof/proof-log.ts): a
 * retry with the same impression ids finds them proven (duplicate, naming the first proof) or proves them. A dry run
 * is placed on this node's copy, in its transaction, which is rolled back.
 */
export function placePlays (effects: ProofEffects, commands: ProofCommand[], now: number, dryRun: boolean): Proved<ProofVerdict[]> {
  const { store } = effects
  const log = store.share.proofs
  if (log === undefined || dryRun || commands.length === 0) return commands.map((c) => placeProof(effects, c, { logTime: now, mine: true, log: log !== undefined }))
  const here = commands.map((c) => repeatHere(effects, c))
  const toLog = commands.filter((_, i) => here[i] === undefined)
  for (const c of toLog) store.pendingProofs.putSync(c.proof_id, { command: c, at: now })
  return new Promise((resolve, reject) => {
    store.afterCommit(() => {
      (toLog.length === 0 ? Promise.resolve([]) : log(toLog)).then((logged) => {
        if (logged === undefined) return reject(new ApiError('service_unavailable', 'The cluster could not place these plays in their proof chains in time; retry shortly with the same impression ids.', { retry_after_seconds: 1 }, { 'Retry-After': '1' }))
        let next = 0
        resolve(here.map((v) => v ?? logged[next++]!))
      }, reject)
    })
  })
}

/** Goes on with what is proved, now or once it is. */
export function thenProved<T, U> (proved: Proved<T>, next: (value: T) => U): Proved<U> {
  return proved instanceof Promise ? proved.then(next) : next(proved)
}

/** A handler's answer, held open while its plays are placed (RouteDef.proves). */
export function provedAnswer (proved: Proved<Result>): Result {
  return proved instanceof Promise ? held(proved) : proved
}
