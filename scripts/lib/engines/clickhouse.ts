import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { findBinary, freePort, member, readyOrStopped, stopAll, until, type LocalEngine } from './local.js'

/** Whether a ClickHouse server is installed (Debian's clickhouse-server, 18.16). */
export function clickHouseServerInstalled (): boolean {
  return findBinary('clickhouse-server', ['/usr/sbin', '/usr/bin']) !== undefined
}

/**
 * One ClickHouse server on loopback with its store under dir, configured here rather than by /etc, so that a bench
 * starts its own on a machine that runs another: the one analytics store a cluster's nodes share (CLICKHOUSE_URL),
 * whose CPU the bench counts as the cluster's.
 */
export async function startClickHouseServer (dir: string): Promise<LocalEngine & { url: string }> {
  const home = join(dir, 'clickhouse')
  mkdirSync(home, { recursive: true })
  const [http, tcp] = [await freePort(), await freePort()]
  writeFileSync(join(home, 'users.xml'), `<yandex>
  <profiles><default/></profiles>
  <users><default><password/><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default/></quotas>
</yandex>
`)
  writeFileSync(join(home, 'config.xml'), `<yandex>
  <logger><level>warning</level><log>${join(home, 'server.log')}</log><errorlog>${join(home, 'error.log')}</errorlog></logger>
  <listen_host>127.0.0.1</listen_host>
  <http_port>${http}</http_port>
  <tcp_port>${tcp}</tcp_port>
  <path>${join(home, 'data')}/</path>
  <tmp_path>${join(home, 'tmp')}/</tmp_path>
  <user_files_path>${join(home, 'user_files')}/</user_files_path>
  <users_config>${join(home, 'users.xml')}</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>268435456</mark_cache_size>
</yandex>
`)
  const child = member(findBinary('clickhouse-server', ['/usr/sbin', '/usr/bin'])!, ['--config-file', join(home, 'config.xml')])
  const url = `http://127.0.0.1:${http}`
  const server = {
    name: 'clickhouse',
    url,
    urls: [url],
    members: () => [{ name: 'clickhouse', pid: child.pid! }],
    stop: () => stopAll([child])
  }
  return await readyOrStopped(server, [child], () => until(async () => {
    const res = await fetch(`${url}/?query=SELECT%201`)
    if (!res.ok) throw new Error(`answered ${res.status}`)
  }, 30_000, 'ClickHouse server'))
}
