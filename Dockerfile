# hookrelay as an image, on the Node line the suite runs on (24), pinned to one release. The steps are the ones
# test/package/Image.test.ts runs outside Docker on the same Node line: `npm pack`, `npm ci --omit=dev` from
# package.json and the lock, scripts/prune-runtime.mjs, the package's files over it, then `node dist/cli.js` and
# scripts/healthcheck.sh. Dependencies are installed from package.json and the lock before the sources are copied,
# so a source change rebuilds neither install layer.

# 1. The package, as `npm pack` makes it (the console and the compiled server inside).
FROM node:24.22.3-bookworm AS pack
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm pack --pack-destination /pack && tar xzf /pack/hookrelay-*.tgz -C /pack

# 2. Production dependencies (optional ones included: the server needs them) from the same package.json and lock,
#    pruned to what runs: no install-time packages, no build artefacts or C sources of better-sqlite3. This stage has
#    a C++ toolchain in case no prebuilt SQLite binary fits the platform.
FROM node:24.22.3-bookworm AS install
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/prune-runtime.mjs /tmp/prune-runtime.mjs
RUN npm ci --omit=dev --no-audit --no-fund && node /tmp/prune-runtime.mjs /app && rm -rf /root/.npm
COPY --from=pack /pack/package/ /app/

# 3. The runtime: no toolchain, no npm cache, a non-root user, the SQLite data in a volume.
FROM node:24.22.3-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    HOOKRELAY_DATA_DIR=/data
WORKDIR /app
COPY --from=install /app /app
COPY scripts/healthcheck.sh /usr/local/bin/hookrelay-healthcheck
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8080
# /healthz is liveness (the process answers); /readyz is the readiness a load balancer should use. bash's /dev/tcp,
# not a Node process every 10 s.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 CMD ["/usr/local/bin/hookrelay-healthcheck"]
# node is PID 1 and runs the server itself: SIGTERM reaches it, and it stops accepting, finishes or releases
# in-flight work, and exits 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["node", "dist/cli.js"]
CMD ["serve"]
