import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { connect, type NatsConnection } from 'nats'
import type { Test } from 'tap'
import { natsInstalled, startNatsCluster } from '../../scripts/lib/engines/nats.js'
import { skipFile } from './required.js'

/** A file's own engine: three NATS JetStream members, a directory beside them, and connections to it. */
export interface FileEngine {
  dir: string
  /** Its members' client URLs. */
  urls: string[]
  /** A connection of its own, closed at the file's end. */
  connect (): Promise<NatsConnection>
}

/**
 * Starts a three-member engine for this file, stopped at its end; undefined (the file skipped, or failed where the
 * cluster suite is required) where nats-server is missing.
 */
export async function fileEngine (t: Test, name: string): Promise<FileEngine | undefined> {
  if (!natsInstalled()) {
    skipFile(t, 'cluster', 'nats-server is not installed (apt-get install nats-server): the cluster tests run in CI (.ci/run)')
    return undefined
  }
  const dir = mkdtempSync(join(tmpdir(), `oohbid-${name}-`))
  const engine = await startNatsCluster(join(dir, 'engine'))
  const connections: NatsConnection[] = []
  t.teardown(async () => {
    for (const nc of connections) await nc.close().catch(() => {})
    await engine.stop()
    rmSync(dir, { recursive: true, force: true })
  })
  return {
    dir,
    urls: engine.urls,
    connect: async () => {
      const nc = await connect({ servers: engine.urls })
      connections.push(nc)
      return nc
    }
  }
}
