# syntax=docker/dockerfile:1
# Multi-stage: build with the dev toolchain, run with production dependencies only.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json ./
COPY src ./src
COPY bench ./bench
COPY test ./test
RUN npx tsc -p tsconfig.json

FROM node:20-bookworm-slim
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
# 4001: libp2p TCP; 8686: agent HTTP API
EXPOSE 4001 8686
ENTRYPOINT ["node", "/app/bin/ubicrawl.js"]
CMD ["join", "--data-dir", "/data"]
