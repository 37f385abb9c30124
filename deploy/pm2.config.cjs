// oohbid under PM2 (README, "Running in production"): `pm2 start deploy/pm2.config.cjs`, then `pm2 save` and
// `pm2 startup` to bring it back with the host. One process in fork mode: oohbid runs its own hot threads on every
// core and owns its data directory alone, so PM2's cluster mode would only start copies that refuse to start.
// Settings come from the environment PM2 is started in (README, Configuration), with the production defaults below.
const { join } = require('node:path')

module.exports = {
  apps: [{
    name: 'oohbid',
    script: 'dist/src/main.js',
    cwd: join(__dirname, '..'),
    exec_mode: 'fork',
    instances: 1,
    // Back a second after any exit: kill -9, an abort in native code, the OOM killer. A start that dies within
    // min_uptime counts as unstable; PM2 gives up only after max_restarts of those in a row.
    autorestart: true,
    restart_delay: 1000,
    min_uptime: 5000,
    max_restarts: 1000,
    // SIGTERM drains in-flight requests (SHUTDOWN_GRACE_MS) and closes LMDB before PM2 would send SIGKILL.
    kill_timeout: 30000,
    env: {
      NODE_ENV: 'production',
      PORT: process.env.PORT ?? '8080',
      DATA_DIR: process.env.DATA_DIR ?? '/var/lib/oohbid',
      DEMO_FLEET: process.env.DEMO_FLEET ?? '0'
    }
  }]
}
