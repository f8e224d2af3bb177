/**
 * The offline protocol, version 2.0: a pure, isomorphic library (Uint8Array, @noble/*, cborg,
 * zod; no Node-only API). The byte-exact specification is docs/protocol.md; the test vectors are
 * test/src/protocol/vectors/protocol-v2.json.
 */
export * from './constants.ts';
export { ProtocolError, isProtocolError, protocolErrorCodes, type ProtocolErrorCode } from './errors.ts';
export type { Plc, PlcCommitment, TransferRecord, Rejection, RejectionReason } from './types.ts';
export { rejectionReasons } from './types.ts';
export {
  bytesToHex,
  hexToBytes,
  bytesEqual,
  concatBytes,
  msToIso,
  isoToMs,
  isUuidV4,
  uuidV4FromBytes,
} from './bytes.ts';
export { formatAmountMinor, parseAmountInput, parseCanonicalAmount, decimalsOf } from './amount.ts';
export { base45Encode, base45Decode, base45Alphabet, base45Length } from './base45.ts';
export {
  generateKeyPair,
  publicKeyOf,
  sign,
  verifySignature,
  withSignatureVerifier,
  isValidPublicKey,
  isCanonicalScalar,
  isSmallOrderEncoding,
  smallOrderPointEncodings,
  randomNonce,
  type KeyPair,
  type SignatureVerifier,
} from './keys.ts';
export {
  createPlc,
  encodeCommitment,
  computeCommitmentHash,
  checkCommitmentFields,
  commitmentBytesLength,
  type CreatePlcParams,
} from './commitment.ts';
export {
  appendTransfer,
  signTransferRecord,
  encodeTransferMessage,
  encodeRecordHashInput,
  computeRecordHash,
  currentBearer,
  chainHeadHash,
  transferMessageBytesLength,
  recordHashInputBytesLength,
  type AppendTransferParams,
  type TransferContent,
} from './transfer.ts';
export {
  verifyPlc,
  checkExpiry,
  checkRecordClock,
  compareTransferChains,
  detectFork,
  findForkAgainstKnown,
  verifyForkEvidence,
  type VerifyOptions,
  type VerifiedPrefix,
  type Verified,
  type PlcVerification,
  type ExpiryCheck,
  type RecordClockCheck,
  type ForkEvidence,
  type ChainComparison,
  type ForkDetection,
} from './chain.ts';
export {
  encodeCancelMessage,
  signCancel,
  verifyCancel,
  encodeRedeemMessage,
  signRedeem,
  verifyRedeem,
  isSettlementRail,
  keyOperationMessage,
  signKeyOperation,
  verifyKeyOperation,
  isDeviceId,
  checkFreshness,
  authorizationHash,
  cancelAuthorizationHash,
  redeemAuthorizationHash,
  keyOperationHash,
  type CancelRequest,
  type CancelAuthorization,
  type RedeemRequest,
  type RedeemAuthorization,
  type KeyOperation,
  type SignedKeyOperation,
  type KeyOperationKind,
  type FreshnessCheck,
} from './auth-messages.ts';
export { encodeTransport, decodeTransport, encodeTransportText, decodeTransportText } from './transport.ts';
export {
  sealPayload,
  openSealedPayload,
  deriveSealedKeyMaterial,
  sealedBytesMin,
  sealedBytesMax,
  type SealParams,
  type OpenParams,
  type OpenedPayload,
  type SealedKeyMaterial,
} from './sealed.ts';
export {
  plcJsonSchema,
  transferRecordJsonSchema,
  cancelAuthorizationJsonSchema,
  redeemAuthorizationJsonSchema,
  plcToJson,
  plcFromJson,
  parsePlcJson,
  transferRecordToJson,
  cancelAuthorizationToJson,
  parseCancelAuthorizationJson,
  redeemAuthorizationToJson,
  parseRedeemAuthorizationJson,
  type PlcJson,
  type TransferRecordJson,
  type CancelAuthorizationJson,
  type RedeemAuthorizationJson,
} from './schemas.ts';
export {
  blocklistFormat,
  blocklistDomainTag,
  blocklistKeysMax,
  developmentBlocklistSeed,
  developmentBlocklistPublicKey,
  signedBlocklistJsonSchema,
  canonicalKeyOrder,
  blocklistProblem,
  encodeBlocklist,
  signBlocklist,
  blocklistToJson,
  verifyBlocklistJson,
  isBlocked,
  type Blocklist,
  type SignedBlocklist,
  type SignedBlocklistJson,
  type BlocklistVerification,
} from './blocklist.ts';
