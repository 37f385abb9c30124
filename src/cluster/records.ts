// The cluster's own storage shapes and tables: how far this node has applied each partition's log, and the verdict of
// each entry it applied (src/cluster/partition-log.ts). Local to each node: every holder of a partition derives the
// same rows from the same log.
import { table } from '../store/table.js'

/** Who owns a partition under an epoch: a node, in one life of its process. */
export interface PartitionOwner {
  node: string
  incarnation: string
}

/** A partition as this node has applied its log. */
export interface PartitionMark {
  /**
   * Which stream the mark was applied from (streamIdentity: the name its creator gave it, or its creation time): a
   * stream created again is a new log, never read on from an old mark.
   */
  stream_created: string
  /** The last sequence applied. */
  applied: number
  /** The digest of the entry applied last: a restart checks that the engine still holds that entry at that place. */
  digest: string
  /** Log time: the latest stream timestamp applied (ms), the one clock apply reads. */
  log_time: number
  epoch: number
  owner?: PartitionOwner
  /** Log time of the owner's last beat (or of its takeover). */
  last_beat_at: number
}

/** What apply decided of one entry: accepted, or refused with a reason (fenced, late, duplicate, or the machine's). */
export interface Verdict {
  status: 'accepted' | 'refused'
  reason?: string
  /** What the partition's machine answered, for the proposer. */
  result?: unknown
}

/** An entry's verdict, with the key of the command it carried. */
export interface EntryVerdict {
  key: string
  verdict: Verdict
  /** Log time when it was applied; rows from before it was kept read as long past. */
  at?: number
}

/** A name claimed in the names' log (src/cluster/name-claims.ts): by whom, since when and until when, in log time. */
export interface NameClaim {
  owner: string
  at: number
  lapses_at: number
}

/** A row's value as the names' log last decided it (src/cluster/fenced-commits.ts): removed, or its value. */
export type FencedRow = { removed: true } | { value: unknown }

/**
 * This node's value of a row that travels stamped through the state bucket (src/cluster/row-versions.ts): its stamp,
 * the bucket revision where the value first landed, and the value (removed: none).
 */
export type RowVersion = { stamp: number, rev: number } & FencedRow

/** The cluster's own tables (src/store/tables.ts). */
export const clusterTables = {
  /** log (its stream's name) -> how far this node applied it. */
  partitionMarks: table<PartitionMark, string>({ name: 'partition_marks', ordered: true, shapes: true, replication: 'local', owners: ['src/cluster/'] }),
  /** [log, sequence]: the verdict of every applied entry but an owner's beat, kept a day in log time (partition-log.ts). */
  partitionVerdicts: table<EntryVerdict, [string, number]>({ name: 'partition_verdicts', ordered: true, shapes: true, replication: 'local', owners: ['src/cluster/'] }),
  /** [log, command key]: the sequence whose verdict is the key's outcome (accepted, or a refusal of the machine's). */
  partitionKeys: table<number, [string, string]>({ name: 'partition_keys', ordered: true, replication: 'local', owners: ['src/cluster/'] }),
  /** name -> its live claim, as the names' log decided it. */
  nameClaims: table<NameClaim, string>({ name: 'name_claims', ordered: true, replication: 'local', owners: ['src/cluster/'] }),
  /** campaign id -> the micro-dollars of its budget granted to the nodes, as the grants' log decided (budget-grants.ts). */
  budgetGrants: table<number, string>({ name: 'budget_grants', replication: 'local', owners: ['src/cluster/'] }),
  /**
   * [campaign id, node id] -> the last part of the campaign's budget granted to the node, at its place in the grants'
   * log: what a node that restores a checkpoint credits itself if it never applied its own grant (budget-grants.ts).
   */
  budgetLastGrants: table<{ seq: number, micros: number }, [string, string]>({ name: 'budget_last_grants', ordered: true, replication: 'local', owners: ['src/cluster/'] }),
  /** [ends, window]: the part of each rate window granted to the nodes, as the rate windows' log decided (rate-grants.ts). */
  rateGrants: table<number, [number, string]>({ name: 'rate_grants', ordered: true, replication: 'local', owners: ['src/cluster/'] }),
  /** [lapses_at, name]: the claims in the order they lapse. */
  nameLapses: table<true, [number, string]>({ name: 'name_lapses', ordered: true, replication: 'local', owners: ['src/cluster/'] }),
  /**
   * state key -> 1: book rows that outlive the book stream (a seat's hourly counters), shipped and not yet written to
   * the state bucket by the next snapshot (shipper.ts); kept here, not in memory, so that a node killed before its
   * snapshot writes them when it is back.
   */
  snapshotsDue: table<1, string>({ name: 'snapshots_due', replication: 'local', owners: ['src/cluster/'] }),
  /**
   * state key -> the row's value as the names' log last decided it: every row a transaction under a record's lock
   * wrote, which from then on only the names' log changes (fenced-commits.ts). Part of the names' log's checkpoints.
   */
  fencedRows: table<FencedRow, string>({ name: 'fenced_rows', replication: 'local', owners: ['src/cluster/'] }),
  /**
   * [lock, seq, state key] -> a row, not a record's, that a transaction under the lock wrote, accepted at seq in the
   * names' log: kept there until it is copied to the state bucket (fenced-commits.ts). Part of the log's checkpoints.
   */
  pendingCopies: table<FencedRow, [string, number, string]>({ name: 'pending_copies', ordered: true, replication: 'local', owners: ['src/cluster/'] }),
  /**
   * state key -> this node's value of a row that has come stamped through the state bucket, with its version
   * (row-versions.ts): what tells an older value landing late from a newer one.
   */
  rowVersions: table<RowVersion, string>({ name: 'row_versions', replication: 'local', owners: ['src/cluster/'] }),
  /**
   * state key -> the bucket revision of an older value of a row (a late copy) that this node skipped, whose repair
   * (ChangeShipper.repair) is not known to be done: kept in the skip's transaction, so that a node killed or cut off
   * before its repair lands makes it once back.
   */
  repairsDue: table<number, string>({ name: 'repairs_due', replication: 'local', owners: ['src/cluster/'] }),
  /**
   * seq -> why, whether only in part (a transaction shipped as several commands), and when (ms): this node's
   * transactions under a record's lock that the names' log refused (the lock had passed to another request first),
   * written before the shipped mark passes them, for the request waiting on one to read; kept 10 minutes.
   */
  fencedRefusals: table<{ reason: string, partly: boolean, at: number }, number>({ name: 'fenced_refusals', ordered: true, replication: 'local', owners: ['src/cluster/'] }),
  /**
   * command key -> the log's seq that accepted it: this node's commands the names' log accepted, until they have
   * shipped (record-shipping.ts).
   */
  ownCommits: table<number, string>({ name: 'own_commits', replication: 'local', owners: ['src/cluster/'] }),
  /**
   * seq -> when, in the names' log's time, this node first proposed the command that ships the transaction there, and
   * the last transaction it carries (shipper.ts): proposed again, it is the same command, with the same time.
   */
  commitProposals: table<{ at: number, through: number }, number>({ name: 'commit_proposals', ordered: true, replication: 'local', owners: ['src/cluster/'] })
}
