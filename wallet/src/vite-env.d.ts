/// <reference types="vite/client" />

interface ImportMetaEnv {
  /** A deployment's own blocklist service key (64 lowercase hex digits), built in instead of the development key (docs/wallet.md). */
  readonly VITE_WALLET_BLOCKLIST_KEY?: string;
}
