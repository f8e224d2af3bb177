/**
 * OpenSSL's own verdicts on the crafted Ed25519 cases of the test vectors (`ed25519_cases` in
 * test/src/protocol/vectors/protocol-v2.json; docs/protocol.md sections 2, 14 and 17), with no
 * check of ours: `crypto.verify` of whichever Node runs it, so each Node's bundled OpenSSL can be
 * asked. Plain JavaScript on purpose, so that an older Node without TypeScript runs it too:
 *
 *   /usr/bin/node scripts/ed25519-openssl-verdicts.mjs    # Node 20, OpenSSL 3.0.x
 *   npx node scripts/ed25519-openssl-verdicts.mjs         # Node 24, OpenSSL 3.5.x
 *
 * Prints one JSON object: the Node and OpenSSL versions and, per case, the verdict and whether it
 * is the one the vectors file recorded for `openssl` (generated on Node 24).
 */
import { createPublicKey, verify } from 'node:crypto';
import { readFileSync } from 'node:fs';

const vectors = JSON.parse(readFileSync(new URL('../test/src/protocol/vectors/protocol-v2.json', import.meta.url), 'utf8'));
const spkiPrefix = Buffer.from('302a300506032b6570032100', 'hex');

function opensslVerdict(publicKeyHex, messageHex, signatureHex) {
  try {
    const key = createPublicKey({ key: Buffer.concat([spkiPrefix, Buffer.from(publicKeyHex, 'hex')]), format: 'der', type: 'spki' });
    return verify(null, Buffer.from(messageHex, 'hex'), key, Buffer.from(signatureHex, 'hex')) ? 'accept' : 'refuse';
  } catch {
    return 'refuse';
  }
}

const cases = vectors.ed25519_cases.cases ?? vectors.ed25519_cases;
const verdicts = cases.map((c) => {
  const verdict = opensslVerdict(c.public_key, c.message, c.signature);
  return { name: c.name, verdict, recorded: c.verdicts.openssl, expected: c.expected, differs: verdict !== c.verdicts.openssl };
});
console.log(
  JSON.stringify(
    { node: process.version, openssl: process.versions.openssl, cases: verdicts.length, differing: verdicts.filter((v) => v.differs).map((v) => v.name), verdicts },
    null,
    1,
  ),
);
