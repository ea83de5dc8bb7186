/**
 * The server's environment, declared once (REFERENCE §7): `hookrelay --help` prints it, the README's configuration
 * table is made from it (`npm run config:table`), and the server reads nothing else (`DeclaredEnvironment` refuses any other
 * variable). The modules that parse a value keep its parsing; this table names, defaults and explains it. Plain data,
 * no imports: the CLI loads it before anything else. The client library's variables are the client's own.
 */

export interface EnvironmentVariable {
  readonly name: string
  /** The default as shown in `--help` and the README; "unset" when there is none. */
  readonly default: string
  /** One line for `--help`. */
  readonly summary: string
  /** The README's cell: Markdown, links allowed. */
  readonly details: string
}

/** Every variable named here but OTEL_* is read by the server; the OTEL_* ones are the group of `otelPrefix`. */
export const serverEnvironment: ReadonlyArray<EnvironmentVariable> = [
  { name: "PORT", default: "8080", summary: "HTTP port", details: "HTTP port" },
  {
    name: "HOST",
    default: "0.0.0.0",
    summary: "address to listen on",
    details: "interface to listen on (`127.0.0.1` keeps it local)"
  },
  {
    name: "HOOKRELAY_DATA_DIR",
    default: "./data",
    summary: "directory of the SQLite file, hookrelay.db",
    details: "directory of the SQLite file, `hookrelay.db` (created when missing)"
  },
  {
    name: "DATABASE_URL",
    default: "unset",
    summary: "a postgres:// URL selects PostgreSQL instead of SQLite",
    details: "a `postgres://` (or `postgresql://`) URL selects PostgreSQL instead of SQLite; several hookrelay " +
      "processes may share one database"
  },
  {
    name: "HOOKRELAY_CONFIG",
    default: "unset",
    summary: "a JSON file of sources created or updated at start",
    details: "a JSON file of sources created or updated at start (below)"
  },
  {
    name: "HOOKRELAY_SECRET_KEYS",
    default: "unset",
    summary: "id:base64 keys (32 bytes) sealing stored secrets; the first seals, all open",
    details: "comma-separated `id:base64` keys of 32 bytes that encrypt the stored secrets (shared and signing " +
      "secrets, private keys, static header values); the first seals, every one opens, so keys rotate without " +
      "downtime (`hookrelay rekey`). Unset on SQLite: a key made once in `<data dir>/secret-keys`; required with " +
      "PostgreSQL, the same on every process ([docs/SECURITY.md](docs/SECURITY.md))"
  },
  {
    name: "HOOKRELAY_ADMIN_TOKEN",
    default: "unset",
    summary: "the admin API's bootstrap bearer token (scope admin); unset, the admin API is disabled",
    details:
      "the admin API's bootstrap bearer token (scope `admin`); unset, the admin API is disabled (every `/admin/…` answers 404, API keys included)"
  },
  {
    name: "HOOKRELAY_ALLOW_PRIVATE_NETWORKS",
    default: "false",
    summary: "true allows webhooks to loopback and private addresses",
    details: "`true` allows webhooks to loopback, private, link-local and other internal addresses " +
      "([Security](#security)); `true`/`false`, `yes`/`no`, `on`/`off`, `1`/`0`; anything else stops the start"
  },
  {
    name: "HOOKRELAY_MAX_BACKLOG",
    default: "1000000",
    summary: "pending jobs above which ingest answers 503",
    details: "jobs waiting for delivery above which ingest answers `503 overloaded` with `Retry-After: 5` and " +
      "stores nothing"
  },
  {
    name: "HOOKRELAY_INGEST_CONCURRENCY",
    default: "32",
    summary: "ingest requests committing at once",
    details: "ingest requests committing to the store at once; the others wait for a slot"
  },
  {
    name: "HOOKRELAY_INGEST_WAIT",
    default: "2 seconds",
    summary: "how long a request waits for a commit slot",
    details: "how long a request waits for a commit slot (milliseconds or a duration) before `503 overloaded` " +
      "with `Retry-After: 2`; a commit that has started always finishes"
  },
  {
    name: "HOOKRELAY_RETENTION",
    default: "7 days",
    summary: "how long delivered jobs are kept, in days or a duration",
    details: "how long delivered jobs and their attempts are kept: a number of days or a duration such as " +
      "`36 hours`; dead letters stay until replayed"
  },
  {
    name: "HOOKRELAY_KEEP_ALIVE_TIMEOUT",
    default: "65 seconds",
    summary: "idle keep-alive of HTTP connections",
    details: "how long an idle keep-alive connection stays open (milliseconds or a duration); keep it longer " +
      "than the idle timeout of the load balancer in front (AWS ALB, nginx: 60 s), or it now and then answers 502"
  },
  {
    name: "HOOKRELAY_REQUEST_DEADLINE",
    default: "60 seconds",
    summary: "a request not answered by then gets 503 timeout",
    details: "a request not answered by then gets `503 timeout` (its commit still finishes); milliseconds or a " +
      "duration"
  },
  {
    name: "HOOKRELAY_LOG_LEVEL",
    default: "info",
    summary: "trace, debug, info, warning, error, fatal or none",
    details: "the least severe level logged (JSON lines): `trace`, `debug`, `info`, `warning`, `error`, " +
      "`fatal` or `none`"
  },
  {
    name: "HOOKRELAY_OPERATOR_WEBHOOK",
    default: "unset",
    summary: "an http(s) URL that receives signed operator events",
    details: "an `http:`/`https:` URL that receives operator events ([Endpoint health](#endpoint-health)); it " +
      "goes through the same address policy as deliveries"
  },
  {
    name: "HOOKRELAY_OPERATOR_WEBHOOK_SECRET",
    default: "unset",
    summary: "required with the webhook: the whsec_ secret that signs its events",
    details: "required with the webhook: a `whsec_` secret; every event is signed with Standard Webhooks headers " +
      "(`webhook-id`, `webhook-timestamp`, `webhook-signature`)"
  },
  {
    name: "OTEL_EXPORTER_OTLP_ENDPOINT",
    default: "unset",
    summary: "an OTLP/HTTP collector: export traces, metrics and logs",
    details: "an OTLP/HTTP collector (`http://collector:4318`): traces, metrics and logs go there " +
      "([Telemetry](#operations)); unset, telemetry is off and costs nothing"
  }
]

/** The standard OpenTelemetry variables, read as a group (per signal, samplers, batching: see Telemetry). */
export const otelPrefix = "OTEL_"

/** Whether the server may read `name`: a variable of the table, or one of the standard OTEL_* group. */
export const isServerVariable = (name: string): boolean =>
  name.startsWith(otelPrefix) || serverEnvironment.some((variable) => variable.name === name)

/** The environment section of `hookrelay --help`. */
export const helpText = (): string => {
  const width = Math.max(...serverEnvironment.map((variable) => variable.name.length)) + 2
  const lines = serverEnvironment.map((variable) => {
    const shown = variable.default === "unset" ? "" : ` (${variable.default})`
    return `  ${variable.name.padEnd(width)}${variable.summary}${shown}`
  })
  return [
    ...lines,
    `  ${`${otelPrefix}*`.padEnd(width)}the other standard OpenTelemetry variables (per signal, sampler, batching)`
  ].join("\n")
}

/** The README's configuration table (Markdown). */
export const markdownTable = (): string =>
  [
    "| variable | default | meaning |",
    "|---|---|---|",
    ...serverEnvironment.map((variable) =>
      `| \`${variable.name}\` | ${variable.default === "unset" ? "unset" : `\`${variable.default}\``} | ${
        variable.details.replaceAll("|", "\\|")
      } |`
    ),
    `| \`${otelPrefix}*\` | | the other standard OpenTelemetry variables, each \`OTEL_EXPORTER_OTLP_*\` one also per ` +
    "signal: service name, resource attributes, headers, timeout, compression, protocol, samplers, batching, " +
    "exporters, `OTEL_SDK_DISABLED` ([Telemetry](#operations)) |"
  ].join("\n")
