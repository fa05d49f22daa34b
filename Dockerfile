# a2a-guard: one image for the proxy (default), the reference guardian and the demo agents.
#
#   proxy (default CMD)   node dist/src/main.js                configured by the variables of design section 8
#   reference guardian    node dist/src/guardian/main.js       GUARDIAN_PORT, POLICY_FILE, LOG_LEVEL
#   demo server agent     node dist/src/demo/cake-baker.js     PORT, HOST, PUBLIC_URL
#   demo client agent     node dist/src/demo/cooking-assistant.js  SIDECAR_URL, SIDECAR_READY_URL
#
# There is no init in the image: run it with `docker run --init` or `init: true` in compose
# (docker-compose.yml does), so SIGTERM reaches node at once and zombies are reaped.

# ---- build: all dependencies, TypeScript -> dist/ -------------------------------------------
FROM node:20-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build

# ---- runtime: production dependencies, compiled code, configuration -------------------------
FROM node:20-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist/src ./dist/src
COPY config ./config
USER node
# 8080: the proxy (PORT), 9090: its admin server (ADMIN_PORT: /healthz, /readyz, /metrics)
EXPOSE 8080 9090
CMD ["node", "dist/src/main.js"]
