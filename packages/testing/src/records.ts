/**
 * The one id helper and the one workspace builder of the tests, shared by the contract
 * suites, the fixtures of every area and the apps' tests.
 */
import { randomBytes } from "node:crypto"
import type { Workspace } from "@intake/domain"
import { makeWorkspaceId } from "@intake/domain"

const run = randomBytes(8).toString("hex")
let sequence = 0

/**
 * An id in the service's format (`prefix_` + 32 lowercase hex), unique across the test
 * files of a run (the first half is random per process) and increasing in the order ids
 * are made within one file.
 */
export const uniqueId = (prefix: string): string =>
  `${prefix}_${run}${(sequence++).toString(16).padStart(16, "0")}`

export const aWorkspace = (overrides: Partial<Workspace> = {}): Workspace => ({
  id: makeWorkspaceId(uniqueId("ws")),
  name: "Acme",
  plan: "pro",
  status: "active",
  monthlySubmissionQuota: null,
  rateLimitPerMinute: null,
  createdAt: 1_700_000_000_000,
  updatedAt: 1_700_000_000_000,
  ...overrides
})
