# syntax=docker/dockerfile:1
# Build stage: the same `npm run build` as `npm start` (schemas -> validators and types, then tsc).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY schemas ./schemas
COPY scripts ./scripts
COPY src ./src
COPY test ./test
COPY bench ./bench
RUN npm run build && npm prune --omit=dev

# Runtime stage: compiled code and production dependencies only. uWebSockets.js and lmdb ship glibc binaries,
# hence a Debian base rather than Alpine.
FROM node:20-bookworm-slim
# Moderation runs ffmpeg and ffprobe on untrusted uploads: Debian's, kept current by its security updates, rather
# than the 2018 static builds packaged on npm (src/moderation/media-tools.ts prefers /usr/bin).
RUN apt-get update && apt-get install -y --no-install-recommends ffmpeg && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production PORT=8080 HOST=0.0.0.0 DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8080
# Liveness: /healthz answers while any hot thread serves. Three misses in a row (after a 20 s start) mark the
# container unhealthy, which an orchestrator acts on. A process that exits (kill -9, an abort in native code, the
# OOM killer) is restarted by the run's restart policy: `docker run --restart unless-stopped`, as
# deploy/docker-compose.yml sets (README, "Running in production").
HEALTHCHECK --interval=10s --timeout=2s --start-period=20s --retries=3 CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
# SIGTERM drains in-flight requests and closes LMDB (SHUTDOWN_GRACE_MS).
STOPSIGNAL SIGTERM
CMD ["node", "dist/src/main.js"]
