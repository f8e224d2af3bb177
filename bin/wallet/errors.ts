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
  'server_unreachable',
  'server_refused',
] as const;

export type WalletErrorCode = (typeof walletErrorCodes)[number];

export class WalletError extends Error {
  readonly code: WalletErrorCode;

  constructor(code: WalletErrorCode, message: string) {
    super(message);
    this.name = 'WalletError';
    this.code = code;
  }
}
