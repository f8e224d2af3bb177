/**
 * Request examples for /openapi.json and /docs, made with the protocol library from fixed keys
 * (alice: seed 0x01 x 32, bob: seed 0x02 x 32) so that every signature in them verifies. Dates are
 * fixed, so a server refuses them as stale: they show the shape, a wallet makes fresh ones
 * (`npm run wallet`, docs/protocol.md).
 */

export const examplePubkeys = {
  alice: '8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c',
  bob: '8139770ea87d175f56a35466c34c7ecccb8d8a91b4ee37a25df60f5b8fc9b394',
} as const;

export const exampleTokenId = '6f1c2a4e-8d3b-4c7a-9e2f-5b8a1d4c3e7f';

/** The PLC as alice issued it (25.00 BRL, 24 hours, no hops). */
export const examplePlcIssued = {
  version: '2.0',
  token_id: '6f1c2a4e-8d3b-4c7a-9e2f-5b8a1d4c3e7f',
  issuer_pubkey: '8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c',
  amount: '25.00',
  currency: 'BRL',
  created_at: '2026-01-15T12:00:00.000Z',
  expires_at: '2026-01-16T12:00:00.000Z',
  nonce: '03030303030303030303030303030303',
  commitment_hash: '34afb30071f16c752a067d7709233cac22fdd3e2269a3bf3b2d8fdcfbcc8d01e',
  signature: 'b0c95225ede5cef14c1984c01c0b61929b161b0d9f009de55ca73b2589adec78b7823f1a914a7356f7b33ce968a9eb64e3d9ef151592d52f5a96df6b49c75f04',
  transfer_chain: [],
};

/** The same PLC after one offline hop, alice to bob. */
export const examplePlcTransferred = {
  ...examplePlcIssued,
  transfer_chain: [
    {
      sender_pubkey: '8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c',
      recipient_pubkey: '8139770ea87d175f56a35466c34c7ecccb8d8a91b4ee37a25df60f5b8fc9b394',
      timestamp: '2026-01-15T12:10:00.000Z',
      nonce: '04040404040404040404040404040404',
      prev_hash: '34afb30071f16c752a067d7709233cac22fdd3e2269a3bf3b2d8fdcfbcc8d01e',
      signature: '3ac4b5fed3392e09685c1aa127f1d8b511af3933ce7179c94ab3d5850787ad7962154b94cd997e5eae328bb44adcd55eb6d2e47675263d4a2fda38177a6a5206',
      hash: '0d2223d9496ff5be35440f76a16b4a67472639da407f1c478e60594fc7f4099f',
    },
  ],
};

/** examplePlcTransferred in the compact QR text form. */
export const exampleTransportText = 'PLC2:6MLEOCY$57D042EUF5K%H3U9+:JYPBUV3O+71J0554XDH$:RPB1C/IGLAFW59PN1NE71DA7OGWI0O3.WEV90 .1LSBJ736ZOUOC8IAXY0000690.KO.2SJ+0000690B5P/E7D216H06H06H06H06H06H06H06H0781088DKPYZ4F2TWMU7A3+COXJ11OIYZ2MW1M30 :SG6LOX4J:LXBF/KG6G3OI9X:ATTM$MTTLL.XC OR.T2EPIH:5D3JFPD99P:M0NHGT70-44-B7H%1S FG2C7TKR:C7U92+P9+H+II85UUNK 4V*PBKMP0WIRI31003VJE9IFCO95A%M0%M0%M0%M0%M0%M0%M0%M027BEJ7F0NSVQ+ 5V8DMG3A25$HRRA2IA7J4Q$HF/J9V:Q$.0*-L:HC/O9S:P+/F:0MYTH*K9$/Q25NV*SK EUX7A26447ILFSGA';

/** alice cancels the issued PLC. */
export const exampleCancelAuthorization = {
  token_id: '6f1c2a4e-8d3b-4c7a-9e2f-5b8a1d4c3e7f',
  commitment_hash: '34afb30071f16c752a067d7709233cac22fdd3e2269a3bf3b2d8fdcfbcc8d01e',
  timestamp_ms: 1768478460000,
  issuer_pubkey: '8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c',
  signature: 'a8e04d28a4bc98d19eb39b30d2900e8fcdd79d8b5be7eb448fccb2c501e44da3acee3ed34bd363a91fd51ecc130d812c12f7398c56bc7d456457567237a25c04',
};

/** bob redeems examplePlcTransferred to a Pix random key. */
export const exampleRedeemAuthorization = {
  token_id: '6f1c2a4e-8d3b-4c7a-9e2f-5b8a1d4c3e7f',
  head_hash: '0d2223d9496ff5be35440f76a16b4a67472639da407f1c478e60594fc7f4099f',
  settlement_rail: 'pix',
  destination: '123e4567-e89b-42d3-a456-556642440000',
  timestamp_ms: 1768482000000,
  bearer_pubkey: '8139770ea87d175f56a35466c34c7ecccb8d8a91b4ee37a25df60f5b8fc9b394',
  signature: '260856aa02b7f65df8148942d8896b97caccbbd6a57e2fa223ce371c32fbdcdaf32ebe18ce4de9889eb8365218084c5800be7272f0f143f0869d9585769f0002',
};

/** examplePlcTransferred as base64 JSON (the /settlements form). */
export const examplePlcPayloadBase64 = 'eyJ2ZXJzaW9uIjoiMi4wIiwidG9rZW5faWQiOiI2ZjFjMmE0ZS04ZDNiLTRjN2EtOWUyZi01YjhhMWQ0YzNlN2YiLCJpc3N1ZXJfcHVia2V5IjoiOGE4OGUzZGQ3NDA5ZjE5NWZkNTJkYjJkM2NiYTVkNzJjYTY3MDliZjFkOTQxMjFiZjM3NDg4MDFiNDBmNmY1YyIsImFtb3VudCI6IjI1LjAwIiwiY3VycmVuY3kiOiJCUkwiLCJjcmVhdGVkX2F0IjoiMjAyNi0wMS0xNVQxMjowMDowMC4wMDBaIiwiZXhwaXJlc19hdCI6IjIwMjYtMDEtMTZUMTI6MDA6MDAuMDAwWiIsIm5vbmNlIjoiMDMwMzAzMDMwMzAzMDMwMzAzMDMwMzAzMDMwMzAzMDMiLCJjb21taXRtZW50X2hhc2giOiIzNGFmYjMwMDcxZjE2Yzc1MmEwNjdkNzcwOTIzM2NhYzIyZmRkM2UyMjY5YTNiZjNiMmQ4ZmRjZmJjYzhkMDFlIiwic2lnbmF0dXJlIjoiYjBjOTUyMjVlZGU1Y2VmMTRjMTk4NGMwMWMwYjYxOTI5YjE2MWIwZDlmMDA5ZGU1NWNhNzNiMjU4OWFkZWM3OGI3ODIzZjFhOTE0YTczNTZmN2IzM2NlOTY4YTllYjY0ZTNkOWVmMTUxNTkyZDUyZjVhOTZkZjZiNDljNzVmMDQiLCJ0cmFuc2Zlcl9jaGFpbiI6W3sic2VuZGVyX3B1YmtleSI6IjhhODhlM2RkNzQwOWYxOTVmZDUyZGIyZDNjYmE1ZDcyY2E2NzA5YmYxZDk0MTIxYmYzNzQ4ODAxYjQwZjZmNWMiLCJyZWNpcGllbnRfcHVia2V5IjoiODEzOTc3MGVhODdkMTc1ZjU2YTM1NDY2YzM0YzdlY2NjYjhkOGE5MWI0ZWUzN2EyNWRmNjBmNWI4ZmM5YjM5NCIsInRpbWVzdGFtcCI6IjIwMjYtMDEtMTVUMTI6MTA6MDAuMDAwWiIsIm5vbmNlIjoiMDQwNDA0MDQwNDA0MDQwNDA0MDQwNDA0MDQwNDA0MDQiLCJwcmV2X2hhc2giOiIzNGFmYjMwMDcxZjE2Yzc1MmEwNjdkNzcwOTIzM2NhYzIyZmRkM2UyMjY5YTNiZjNiMmQ4ZmRjZmJjYzhkMDFlIiwic2lnbmF0dXJlIjoiM2FjNGI1ZmVkMzM5MmUwOTY4NWMxYWExMjdmMWQ4YjUxMWFmMzkzM2NlNzE3OWM5NGFiM2Q1ODUwNzg3YWQ3OTYyMTU0Yjk0Y2Q5OTdlNWVhZTMyOGJiNDRhZGNkNTVlYjZkMmU0NzY3NTI2M2Q0YTJmZGEzODE3N2E2YTUyMDYiLCJoYXNoIjoiMGQyMjIzZDk0OTZmZjViZTM1NDQwZjc2YTE2YjRhNjc0NzI2MzlkYTQwN2YxYzQ3OGU2MDU5NGZjN2Y0MDk5ZiJ9XX0=';

/** A redemption id as the redeem answer gives it out (a random UUID v4). */
export const exampleRedemptionId = '3f2b8c1e-5a7d-4e9b-8c2a-1d6f0e4b7a93';

/**
 * alice's PIN (docs/security.md). The client's hash is the client's own choice; this example's is
 * SHA-256(salt | UTF-8 PIN) with the salt 0x07 x 16: PIN 1234, and 5678 as the new one.
 */
export const examplePin = {
  ownerId: '8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c',
  salt: '07070707070707070707070707070707',
  pinHash: 'e1a48ec3f020a4ce7f6374c7e656ef713d164ebea476defc93842f97b85194c4',
  newPinHash: '13f291a37652ab40cf43471407ac841d6255d0ad0515d44f455591051dc328da',
  email: 'alice@example.com',
  /** A reset code as the e-mail carries it (32 bytes 0x08, base64url). */
  resetToken: 'CAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAg',
} as const;

/**
 * A key backup and its recovery (docs/protocol.md 9.3, 9.5, 9.6). alice's key stands for the
 * recovery key a wallet derives from its passphrase; the sealed seed is bob's wallet seed
 * (0x02 x 32) and device id, sealed in the format of 9.6 with the sealing key 0x05 x 32 and the
 * nonce 0x06 x 24. Signed by alice over `svc:backup:device-7f3a9c:<alice>:1768478700000` and
 * `svc:recover:device-7f3a9c:<alice>:1768482300000`.
 */
export const exampleKeyBackup = {
  public_key: '8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c',
  device_id: 'device-7f3a9c',
  encrypted_seed:
    '01060606060606060606060606060606060606060606060606c2536030335ee167062227478f5047419d2fda4844ca4af07dd8b13f75a2e0ae8ea284226eadb7954656296650a7685cfd7f6dfdc969818371afc5cfb6',
  device_signature: 'bc3803ea49f62b3312915b743b176cc25f1ad53fd7ff2c4b5bf99e947158a7ebcd4350443b4714c21ff427fd332ce2a4058aca4f71bebc62da4dab15b46adc0b',
  operation_timestamp: 1768478700000,
};

export const exampleKeyRecover = {
  public_key: '8a88e3dd7409f195fd52db2d3cba5d72ca6709bf1d94121bf3748801b40f6f5c',
  device_id: 'device-7f3a9c',
  device_signature: '5af3fba6c24e7a07bf4b037687ed21d32f5998359268ca540fc17b185c1a1c1492b9abfb26819b605f3f2bd04f2b306d459135ee51157a425e7afbb67592e40a',
  operation_timestamp: 1768482300000,
};

/** bob's consent to fee schedule version 1: `svc:fee-consent:device-7f3a9c:<bob>:1:1768479000000` (docs/limits-and-fees.md). */
export const exampleFeeConsent = {
  public_key: '8139770ea87d175f56a35466c34c7ecccb8d8a91b4ee37a25df60f5b8fc9b394',
  schedule_version: 1,
  device_id: 'device-7f3a9c',
  operation_timestamp: 1768479000000,
  device_signature:
    'a4375ed0704ab25ec0843f05e1579b4a34ed603462b5255aff1efd9443b54dd82f0975dd7f76490c302604a4053e5195aba1cc949dcf786077e58d6ac2602c0e',
};

/**
 * alice's limit increase request for device-7f3a9c (docs/limits-and-fees.md, "Increase requests"):
 * `svc:limit-increase:<alice>:400000:1500000:1768479000000:device-7f3a9c`, signed with alice's key
 * (seed 0x01 x 32; checked by test/src/limit-increase.test.ts).
 */
export const exampleLimitIncrease = {
  device_id: 'device-7f3a9c',
  owner_id: examplePubkeys.alice,
  requested_max_amount: '4000.00',
  requested_daily_limit: '15000.00',
  reason: 'monthly supplier payments',
  operation_timestamp: 1768479000000,
  device_signature:
    '2a9745a581baa5dfd641c57bef642b9a732de9096353b39f9852c354d8f67a9856355fb92991823dfb9646f53b87b060de19bd935b41ab32c1ea261ed2c9a803',
};
