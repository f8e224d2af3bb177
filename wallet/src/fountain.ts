/**
 * Animated QR codes (docs/wallet.md): the one implementation the CLI wallet uses too,
 * bin/wallet/fountain.ts (@ngraveio/bc-ur over the binary transport form). The library is written
 * for Node's Buffer: the shim sets the `buffer` package's before the library loads.
 */
import './buffer-shim.ts';

export { FountainDecoder, FountainEncoder, decodeFountainParts, fountainParts, isFountainPart, fragmentBytes } from '../../bin/wallet/fountain.ts';
