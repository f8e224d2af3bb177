/**
 * A business customer's states and the admin's actions on them (docs/b2b.md, "States"):
 * PENDING_REVIEW -> ACTIVE (approve), ACTIVE -> SUSPENDED (suspend), SUSPENDED -> ACTIVE
 * (approve), any but BLOCKED -> BLOCKED (block). BLOCKED is final. Anything else is refused.
 */

export const b2bCustomerStatuses = ['PENDING_REVIEW', 'ACTIVE', 'SUSPENDED', 'BLOCKED'] as const;
export type B2bCustomerStatus = (typeof b2bCustomerStatuses)[number];

export const b2bAdminActions = ['approve', 'suspend', 'block'] as const;
export type B2bAdminAction = (typeof b2bAdminActions)[number];

const transitions: Readonly<Record<B2bAdminAction, Partial<Record<B2bCustomerStatus, B2bCustomerStatus>>>> = {
  approve: { PENDING_REVIEW: 'ACTIVE', SUSPENDED: 'ACTIVE' },
  suspend: { ACTIVE: 'SUSPENDED' },
  block: { PENDING_REVIEW: 'BLOCKED', ACTIVE: 'BLOCKED', SUSPENDED: 'BLOCKED' },
};

/** The state `action` leads to from `from`, or null when the transition is not allowed. */
export function nextB2bStatus(from: B2bCustomerStatus, action: B2bAdminAction): B2bCustomerStatus | null {
  return transitions[action][from] ?? null;
}

/** Every allowed transition, for the docs' table and its test. */
export function b2bTransitions(): { action: B2bAdminAction; from: B2bCustomerStatus; to: B2bCustomerStatus }[] {
  const rows: { action: B2bAdminAction; from: B2bCustomerStatus; to: B2bCustomerStatus }[] = [];
  for (const action of b2bAdminActions) {
    for (const from of b2bCustomerStatuses) {
      const to = nextB2bStatus(from, action);
      if (to !== null) rows.push({ action, from, to });
    }
  }
  return rows;
}
