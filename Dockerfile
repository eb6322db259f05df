# syntax=docker/dockerfile:1
#
# Image of the service: compiled JavaScript and production dependencies only. It needs an external
# PostgreSQL (DATABASE_URL) and the three keys; see "Running in production" in README.md.
#
#   docker build -t device-cloud-service .
#   docker run -p 3000:3000 -e DATABASE_URL=… -e DEVICE_JWT_SECRET=… -e CUSTOMER_JWT_SECRET=… \
#     -e SECRET_PEPPER=… -e TRUST_PROXY=… device-cloud-service

# Node 24 LTS, as the npm scripts run it (the devDependency `node`, pinned in package.json).
ARG NODE_IMAGE=node:24-bookworm-slim

# --- build: compile TypeScript to dist/ ------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Install scripts are off: the compiler needs none of them (and the devDependency `node`, the
# runtime npm scripts bring on a bare machine, is the image's own Node here).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ormconfig.ts ./
COPY src ./src
RUN npm run build

# --- prod-deps: production node_modules, native addons compiled for this Node ---------------------
FROM ${NODE_IMAGE} AS prod-deps
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 make g++ \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# --omit=optional leaves out embedded-postgres and its server binaries: production runs on
# DATABASE_URL (the service refuses to start without it when NODE_ENV=production).
# argon2 is compiled here against the image's own Node headers rather than trusting a prebuilt
# binary (install scripts are off in this stage).
RUN npm ci --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund \
    && if [ -f /usr/local/include/node/node_api.h ]; then export npm_config_nodedir=/usr/local; fi \
    && npm rebuild argon2 --build-from-source \
    && node -e "require('argon2').hash('probe').then(() => console.log('argon2 ok'))" \
    && npm cache clean --force

# --- runtime -----------------------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
# The allocator settings of `npm start` (README, Memory): two malloc arenas, and every block of
# 128 KiB or more its own mapping, returned when freed (argon2's 19 MiB among them).
ENV NODE_ENV=production \
    PORT=3000 \
    HOST=0.0.0.0 \
    MALLOC_ARENA_MAX=2 \
    MALLOC_MMAP_THRESHOLD_=131072
WORKDIR /app
COPY package.json ./
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# Code stays root-owned and read-only for the process.
USER node
EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health/ready', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The same Node flags as `npm start` (README, Memory): a 4 MB young generation and an old generation
# that grows to twice the live heap before a full collection.
CMD ["node", "--max-semi-space-size=4", "--heap-growing-percent=30", "dist/src/main.js"]
