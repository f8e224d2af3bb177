/**
 * The wallet program's refusals. Each has a stable code printed as `error [code]: message`, so a
 * script driving the wallet (or a test) can branch on it. Protocol errors keep their own codes.
 */
export const walletErrorCodes = [
  'usage',
  'not_initialised',
  'already_initialised',
  'wallet_busy',
  'insecure_key_file',
  'corrupt_state',
  'unknown_token',
  'invalid_input',
  'rejected',
  'expired',
  'timestamp_in_future',
  'not_addressed_to_this_wallet',
  'not_bearer',
  'not_issuer',
  'already_transferred',
  'nothing_to_receive',
  'already_received',
  'stale_chain',
  'fork_detected',
  'known_fork',
  'nonce_reused',
  'token_conflict',
  'token_closed',
  'nothing_to_register',
  'invalid_destination',
  'redemption_open',
  'already_redeemed',
  'already_registered',
  'no_server',
  'server_unreachable',
  'no_such_route',
  'server_refused',
  'no_backup',
  'recovery_mismatch',
  'blocked_signer',
  'blocklist_invalid',
  'blocklist_rollback',
  'unbacked',
] as const;

export type WalletErrorCode = (typeof walletErrorCodes)[number];

/** A refusal's details as the server answered it (status, its stable code, whether replayed). */
export interface ServerRefusal {
  readonly status: number;
  /** The server's code (`INSUFFICIENT_FUNDS`, ...), or the type of a 422 (`PLC_INVALID.timestamp_in_future`). */
  readonly code: string | null;
  readonly replayed: boolean;
}

export class WalletError extends Error {
  readonly code: WalletErrorCode;
  readonly refusal: ServerRefusal | undefined;

  constructor(code: WalletErrorCode, message: string, refusal?: ServerRefusal) {
    super(message);
    this.name = 'WalletError';
    this.code = code;
    this.refusal = refusal;
  }
}
