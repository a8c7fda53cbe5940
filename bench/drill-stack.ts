/**
 * The stack `pnpm stack:drill` (drill.ts) drives, as `pnpm stack:local up` left it in
 * STACK_DIR: its settings (stack.env), its commands, its HTTP API, and its processes' CPU
 * and memory.
 */
import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { allScopes } from "@intake/domain"

const run = promisify(execFile)
const root = join(import.meta.dirname, "..")
export const STACK_DIR = process.env.STACK_DIR ?? "/tmp/intake-stack"

export const env = Object.fromEntries(
  readFileSync(join(STACK_DIR, "stack.env"), "utf8")
    .split("\n")
    .filter((line) => /^[A-Z_0-9]+=/.test(line))
    .map((line) => [
      line.slice(0, line.indexOf("=")),
      line.slice(line.indexOf("=") + 1).replace(/^"|"$/g, "")
    ])
) as Record<string, string>
export const base = env.HTTP_URL!
export const adminToken = env.INTAKE_ADMIN_TOKEN!
export const redisPorts = env.REDIS_PORTS!.split(" ").map(Number)

export const stack = (...args: ReadonlyArray<string>) =>
  run("bash", [join(root, "scripts/stack-local.sh"), ...args], { env: { ...process.env, STACK_DIR } })
export const redisCli = async (port: number, ...args: ReadonlyArray<string>) =>
  (await run("redis-cli", ["-h", "127.0.0.1", "-p", String(port), ...args])).stdout.trim()

// --- HTTP -----------------------------------------------------------------------------------

export interface Answer {
  readonly status: number
  readonly body: unknown
}
export const call = async (method: string, path: string, token: string, body?: unknown, headers = {}) => {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...headers
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    signal: AbortSignal.timeout(15_000)
  })
  const text = await response.text()
  let parsed: unknown = null
  try {
    parsed = JSON.parse(text)
  } catch {}
  return { status: response.status, body: parsed } satisfies Answer
}
/** The envelope's `data` of an answer with `status`, typed as the caller expects it. */
export const data = <A>(answer: Answer, status = 200): A => {
  if (answer.status !== status)
    throw new Error(`expected ${status}, got ${answer.status}: ${JSON.stringify(answer.body)}`)
  return (answer.body as { readonly data: A }).data
}

// --- Provisioning (the operator API, docs/rules.md) ------------------------------------------

export interface Tenant {
  readonly workspaceId: string
  readonly botId: string
  readonly key: string
  readonly keyId: string
}
const schema = [
  { name: "email", label: "Email", type: "email", required: true },
  { name: "ref", label: "Reference", type: "text" }
]
export const provision = async (rateLimitPerMinute: number, webhookUrl?: string): Promise<Tenant> => {
  const workspace = data<{ workspace: { id: string } }>(
    await call("POST", "/admin/workspaces", adminToken, { name: "Drill", plan: "business" }),
    201
  ).workspace
  data(
    await call("PATCH", `/admin/workspaces/${workspace.id}`, adminToken, {
      rate_limit_per_minute: rateLimitPerMinute,
      monthly_submission_quota: 1_000_000
    })
  )
  const bot = data<{ intake_bot: { id: string } }>(
    await call("POST", `/admin/workspaces/${workspace.id}/intake-bots`, adminToken, {
      name: "Drill form",
      schema
    }),
    201
  ).intake_bot
  const key = data<{ api_key: { id: string; key: string } }>(
    await call("POST", `/admin/workspaces/${workspace.id}/api-keys`, adminToken, { scopes: allScopes }),
    201
  ).api_key
  if (webhookUrl !== undefined)
    data(await call("POST", "/v1/webhooks", key.key, { url: webhookUrl, events: ["submission.completed"] }))
  return { workspaceId: workspace.id, botId: bot.id, key: key.key, keyId: key.id }
}

// --- Processes' CPU and memory (Linux /proc) ---------------------------------------------------

const TICKS = 100
export const pidOf = (name: string) => {
  try {
    return Number(readFileSync(join(STACK_DIR, "run", `${name}.pid`), "utf8").trim())
  } catch {
    return Number.NaN
  }
}
export const cpuSeconds = (pid: number) => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ")
    return (Number(fields[11]) + Number(fields[12])) / TICKS
  } catch {
    return Number.NaN
  }
}
export const memoryMb = (pid: number, field: "VmRSS" | "VmHWM") => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    return Math.round(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1]) / 1024)
  } catch {
    return Number.NaN
  }
}
/** CPU seconds of the stack's PostgreSQL (its postmaster and every live backend) and of its PgBouncer. */
export const databaseCpu = async () => {
  const postmaster = Number(readFileSync(join(STACK_DIR, "pg", "postmaster.pid"), "utf8").split("\n")[0])
  const { stdout } = await run("ps", ["--ppid", String(postmaster), "-o", "pid="]).catch(() => ({
    stdout: ""
  }))
  const backends = stdout
    .split("\n")
    .map((line) => Number(line.trim()))
    .filter((pid) => pid > 0)
  return {
    postgres: [postmaster, ...backends]
      .map(cpuSeconds)
      .filter(Number.isFinite)
      .reduce((a, b) => a + b, 0),
    pgbouncer: cpuSeconds(pidOf("pgbouncer"))
  }
}
export const metric = async (url: string, name: string, labels = "") => {
  const text = await (await fetch(url)).text()
  return text
    .split("\n")
    .filter((line) => line.startsWith(name) && line.includes(labels))
    .map((line) => Number(line.split(" ").at(-1)))
    .reduce((a, b) => a + b, 0)
}
