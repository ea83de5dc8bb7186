# hookrelay as an image. Its install and start steps are the ones test/package/Install.test.ts runs:
# `npm pack` in a checkout, the tarball installed into an empty folder with production dependencies
# only (install scripts run: better-sqlite3 fetches its prebuilt binary, or compiles with the
# toolchain of the install stage), then the installed `hookrelay` bin. Nothing else runs here.

# 1. The package, as `npm pack` makes it (the console and the compiled server inside).
FROM node:24-bookworm AS pack
WORKDIR /src
COPY . .
RUN npm ci && npm pack --pack-destination /pack && mv /pack/hookrelay-*.tgz /pack/hookrelay.tgz

# 2. The tarball installed with production dependencies only (this stage has a C++ toolchain, in
#    case no prebuilt SQLite binary fits the platform).
FROM node:24-bookworm AS install
WORKDIR /app
COPY --from=pack /pack/hookrelay.tgz /tmp/hookrelay.tgz
RUN echo '{"name":"hookrelay-image","private":true}' > package.json \
  && npm install --omit=dev --no-audit --no-fund /tmp/hookrelay.tgz

# 3. The runtime: no toolchain, no npm cache, a non-root user, the SQLite data in a volume.
FROM node:24-bookworm-slim
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    HOOKRELAY_DATA_DIR=/data
WORKDIR /app
COPY --from=install /app /app
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 8080
# /healthz is liveness (the process answers); /readyz is the readiness a load balancer should use.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# The bin is node itself (its shebang execs node): SIGTERM reaches the server, which stops
# accepting, finishes or releases in-flight work, and exits 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/app/node_modules/.bin/hookrelay"]
CMD ["serve"]
