# syntax=docker/dockerfile:1
# Multi-stage: build with the dev toolchain, run with production dependencies only. Node 26, the active LTS
# line since October 2026 (package.json engines: >= 20.19; CI runs the tests on the machine's Node and on
# Node 24, and the demo on Node 26, .ci/run).
FROM node:26-trixie-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json ./
COPY src ./src
COPY bench ./bench
COPY test ./test
COPY scripts ./scripts
# tsc, then the CLI bundle that bin/ubicrawl.js loads (scripts/bundle.js)
RUN npm run build

FROM node:26-trixie-slim
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY bin ./bin
RUN useradd --system --create-home --home-dir /home/ubicrawl ubicrawl \
 && mkdir -p /data && chown ubicrawl /data
USER ubicrawl
VOLUME ["/data"]
# 4001: libp2p TCP; 7070: agent HTTP API (beyond loopback it requires the token in /data/api.token)
EXPOSE 4001 7070
# The API answers /status once the agent is up; the token file is the one passed to --api-token-file.
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:7070/status',{headers:{authorization:'Bearer '+require('fs').readFileSync('/data/api.token','utf8').trim()}}).then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["node", "/app/bin/ubicrawl.js"]
# Create /data/api.token (16+ characters, chmod 600) and /data/swarm.key (`ubicrawl keygen`, the same file on
# every machine) before the first start: without a swarm key the mesh port would be open to anyone (docs/mesh.md "Admission").
CMD ["join", "--data-dir", "/data", "--swarm-key", "/data/swarm.key", "--listen", "/ip4/0.0.0.0/tcp/4001", "--api", "0.0.0.0:7070", "--api-token-file", "/data/api.token"]
