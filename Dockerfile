# a2a-guard images: one Dockerfile, three targets.
#
#   proxy (default)  a2a-guard: node dist/a2a-guard.js (src/main.ts bundled into one file, run with
#                    its V8 code cache: scripts/bundle.ts, a faster start), configured by the variables of the README;
#                    also runs the reference guardian: node dist/src/guardian/main.js
#   guardian         the same files, the reference guardian as CMD and health check
#   demo             + the demo agents and the A2A SDK they use (never in the production images):
#                    node dist/src/demo/cake-baker.js, node dist/src/demo/cooking-assistant.js
#
#   podman build --format docker -t a2a-guard:0.1.0 .                      (docker build -t ... .)
#   podman build --format docker --target guardian -t a2a-guard-guardian:0.1.0 .
#   podman build --format docker --target demo -t a2a-guard-demo:0.1.0 .
#   (--format docker keeps the HEALTHCHECK; podman's default OCI format has none.)
#
# The runtime images are built FROM scratch: the Node 24 LTS binary, the few shared libraries it
# links (found with ldd), a passwd entry for user 10001, the compiled JavaScript and the production
# dependencies. No shell, package manager, npm or OS packages: less to patch and less to exploit.
# Debug with an ephemeral container (kubectl debug) or the build stages.
# The user is numeric (10001:10001), so Kubernetes can verify runAsNonRoot; the files belong to
# root and are read-only for it, and nothing is written at run time (readOnlyRootFilesystem works).
# There is no init in the image: `docker run --init`, `init: true` in compose. In Kubernetes the
# programs handle SIGTERM themselves.
#
# NODE_IMAGE is the official Node 24 LTS image. Where no registry can be reached,
# scripts/node-base-image.sh builds a local stand-in under the same name.
ARG NODE_IMAGE=docker.io/library/node:24-bookworm-slim

# ---- build: all dependencies, TypeScript -> JavaScript -------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
# The npm workspace: the proxy and the toolkit package it depends on (packages/toolkit).
COPY package.json package-lock.json ./
COPY packages/toolkit/package.json ./packages/toolkit/package.json
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY packages/toolkit/tsconfig.json ./packages/toolkit/tsconfig.json
COPY packages/toolkit/src ./packages/toolkit/src
COPY src ./src
COPY scripts/bundle.ts ./scripts/bundle.ts
# The code cache is made by a --check run that validates the embedded guardian's default policy.
COPY config/policy.json ./config/policy.json
# out/prod: the programs (and the bundled proxy); out/demo: the demo agents; out/toolkit: the toolkit package the
# unbundled programs require. JavaScript only (no declarations, no maps).
RUN npm run build \
 && mkdir -p out/prod out/demo out/toolkit/dist \
 && cp -r dist/src out/prod/src \
 && cp packages/toolkit/package.json out/toolkit/ && cp packages/toolkit/dist/*.js out/toolkit/dist/ \
 && cp dist/a2a-guard.js dist/a2a-guard.bundle.js dist/a2a-guard.bundle.cache out/prod/ \
 && mv out/prod/src/demo out/demo/demo \
 && find out -name '*.d.ts' -delete -o -name '*.map' -delete

# ---- production dependencies only ----------------------------------------------------------
FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
# node_modules/@a2a-guard/toolkit is a link to packages/toolkit, which the runtime image has.
COPY packages/toolkit/package.json ./packages/toolkit/package.json
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && find node_modules \( -name '*.md' -o -name '*.d.ts' -o -name '*.d.mts' -o -name '*.d.cts' -o -name '*.map' \) -type f -delete

# ---- root file system: node and what it links, a numeric user --------------------------------
FROM ${NODE_IMAGE} AS rootfs
RUN set -eu; \
    mkdir -p /rootfs/usr/local/bin /rootfs/etc /rootfs/tmp /rootfs/app; \
    cp /usr/local/bin/node /rootfs/usr/local/bin/node; \
    for lib in $(ldd /usr/local/bin/node | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do \
      cp --parents -L "$lib" /rootfs/; \
    done; \
    printf 'root:x:0:0:root:/root:/sbin/nologin\na2a-guard:x:10001:10001:a2a-guard:/app:/sbin/nologin\n' > /rootfs/etc/passwd; \
    printf 'root:x:0:\na2a-guard:x:10001:\n' > /rootfs/etc/group; \
    chmod 1777 /rootfs/tmp; \
    chroot /rootfs /usr/local/bin/node -e 'process.exit(0)'

# ---- what every runtime image has ------------------------------------------------------------
FROM scratch AS runtime
ARG VERSION=0.1.0
ARG REVISION=
ARG SOURCE_URL=
COPY --from=rootfs /rootfs/ /
ENV PATH=/usr/local/bin NODE_ENV=production
WORKDIR /app
COPY package.json LICENSE ./
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=build /app/out/toolkit ./packages/toolkit
COPY --from=build /app/out/prod/src ./dist/src
# The code cache was made by the build stage's node, the same binary as this image's (V8 ignores a cache from another).
COPY --from=build /app/out/prod/a2a-guard.js /app/out/prod/a2a-guard.bundle.js /app/out/prod/a2a-guard.bundle.cache ./dist/
COPY config ./config
USER 10001:10001
LABEL org.opencontainers.image.title="a2a-guard" \
      org.opencontainers.image.description="A2A interception proxy enforcing the OWASP Agent Observability Standard through a guardian agent" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE_URL}" \
      org.opencontainers.image.licenses="Apache-2.0"

# ---- the reference guardian ------------------------------------------------------------------
FROM runtime AS guardian
EXPOSE 7070
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 CMD ["node", "dist/src/healthcheck.js", "guardian"]
CMD ["node", "dist/src/guardian/main.js"]

# ---- the demo agents (not a production image) ------------------------------------------------
FROM runtime AS demo
# The A2A SDK and its one dependency (test/demo/compose.test.ts checks that it still has only jose).
COPY --from=build /app/node_modules/@a2a-js ./node_modules/@a2a-js
COPY --from=build /app/node_modules/jose ./node_modules/jose
COPY --from=build /app/out/demo/demo ./dist/src/demo
HEALTHCHECK NONE
EXPOSE 8000
CMD ["node", "dist/src/demo/cake-baker.js"]

# ---- the proxy (default target) ----------------------------------------------------------------
FROM runtime AS proxy
# 8080: the proxy (PORT), 9090: its admin server (ADMIN_PORT: /healthz, /readyz, /metrics)
EXPOSE 8080 9090
HEALTHCHECK --interval=15s --timeout=3s --start-period=5s --retries=3 CMD ["node", "dist/src/healthcheck.js"]
CMD ["node", "dist/a2a-guard.js"]
