/**
 * The wallet program's command line: parses the arguments, runs one command, prints its output
 * or its refusal, and sets the exit status. Loaded by bin/wallet.ts once the compile cache is on.
 */
import { parseArgs } from 'node:util';
import { isProtocolError } from '../../src/protocol/index.ts';
import {
  balanceCommand,
  blocklistCommand,
  cancelCommand,
  configCommand,
  createCommand,
  dropCommand,
  initCommand,
  listCommand,
  publishCommand,
  receiveCommand,
  registerCommand,
  redeemCommand,
  feesCommand,
  reissueCommand,
  sendCommand,
  showCommand,
  showKeyCommand,
  statusCommand,
  type CommandContext,
} from './commands.ts';
import { backupCommand, recoverCommand } from './backup.ts';
import { vectorsCommand } from './vectors.ts';
import { WalletError } from './errors.ts';

const usage = `usage: wallet [--dir DIR] <command> [options]

DIR defaults to ./.wallet. URL is the server's base URL (http://host:port, with or without /api/v1);
every online command takes --server URL, or uses the server the wallet remembers (init --server,
config --server). "wallet help COMMAND" or "wallet COMMAND --help" shows one command.

  init [--server URL]                    create this device's key pair (and remember a server)
  config [--server URL | --forget-server] [--blocklist-key HEX|development]
                                         show, set or forget the server this wallet remembers,
                                         and the service key the blocklist must be signed with
  show-key                               print this wallet's public key and device id
  create --amount 12.34 --currency BRL --ttl-hours 24 [--server URL] [--offline]
                                         issue and sign a PLC, and register it with the server
                                         (--offline, or no server: keep it local; publish later)
  publish --token ID [--server URL]      register a PLC this wallet issued whose create failed or
                                         was made offline (asks the server first; never books it twice)
  reissue --token ID [--server URL]      replace a PLC the server never accepted (refused, or too
                                         old to publish) by a new one of the same amount, and register it
  drop --token ID [--server URL]         forget a PLC the server never accepted and no one received
  send --token ID --to PUBKEY [--out FILE] [--format text|json] [--qr] [--image FILE.png|FILE.svg]
       [--ur-parts FILE]                 sign a transfer; print the PLC2: QR text or write FILE;
                                         --qr draws the QR code here, --image writes it as a picture;
                                         --ur-parts writes the animated code's ur:bytes parts, one a
                                         line (the only form for over 20 records)
  receive (--in FILE | --text TEXT | --image FILE.png) [--server URL]
                                         verify a PLC sent to this wallet (text, JSON, the animated
                                         code's ur:bytes parts one a line, or a QR code picture;
                                         --in - reads stdin) and store it; refuses one a blocked key signed
                                         (the blocklist refreshed first when a server is known)
  blocklist [--server URL]               download the service's signed blocklist, verify it
                                         against the trusted key and keep it
  show --token ID                        print a PLC, its chain, and what the server answered
  list [--server URL]                    one line per PLC this wallet knows, with what it recorded of
                                         the server's view; --server also asks that server now
  register --token ID [--server URL] [--device-id D]
                                         post this wallet's copy of a PLC with its whole chain so
                                         the server learns the offline hops; prints its answer
  cancel --token ID [--server URL]       sign (and post) the issuer's cancel of an untransferred PLC
  redeem --token ID (--pix-key KEY | --boleto LINE) [--server URL]
                                         check the key, or the boleto's digitable line (check
                                         digits, amount at most the PLC's; the server requires the
                                         PLC's amount less its fee), sign (and post) the
                                         bearer's redeem; prints the redemption's id and status
                                         (the signed body offline)
  backup --server URL [--passphrase-file FILE]
                                         seal this wallet's seed under a recovery passphrase and
                                         store it with the server (a passphrase is generated and
                                         printed once unless FILE holds one; - reads stdin)
  recover --server URL --passphrase-file FILE [--device-id D]
                                         bring back the keys of a wallet whose keys are lost, from
                                         the passphrase alone (into DIR; its PLC files are kept)
  status --token ID [--server URL]       what the server knows of a PLC and of its redemption
  balance [--currency BRL] [--server URL]
                                         this wallet's account at the server
  fees [--consent] [--server URL]        the server's fee schedule; --consent signs (and posts)
                                         this key's consent to its current version
  vectors [--in FILE]                    check the protocol's test vectors with this program's code
  help [COMMAND]                         this text, or one command's`;

/** One command's entry of the usage text (its first line and the indented lines under it). */
export function commandUsage(command: string): string | undefined {
  const lines = usage.split('\n');
  const start = lines.findIndex((line) => new RegExp(`^ {2}${command.replace(/[-]/g, '\\-')}(?: |$)`).test(line));
  if (start === -1) return undefined;
  let end = start + 1;
  while (end < lines.length && /^ {3,}\S/.test(lines[end]!)) end += 1;
  // Each line is "synopsis   description"; a synopsis too long for one line goes on indented by less than the description.
  const synopsis: string[] = [];
  const description: string[] = [];
  for (const [index, line] of lines.slice(start, end).entries()) {
    const [head = '', ...rest] = line.trim().split(/ {2,}/);
    if (index === 0 || /^ {3,12}\S/.test(line)) {
      synopsis.push(head);
      if (rest.length > 0) description.push(rest.join(' '));
    } else {
      description.push(line.trim());
    }
  }
  return [`usage: wallet [--dir DIR] ${synopsis.join(' ')}`, '', ...description.map((line) => `  ${line}`)].join('\n');
}

/** Levenshtein distance, for the suggestion after a mistyped command. */
function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** The command a mistyped name most likely meant: within 2 edits (1 for names of 3 letters or fewer), or a prefix of one. */
export function suggestCommand(typed: string, commands: readonly string[]): string | undefined {
  const prefixed = commands.filter((command) => typed.length >= 3 && command.startsWith(typed));
  if (prefixed.length === 1) return prefixed[0];
  const ranked = commands.map((command) => ({ command, distance: editDistance(typed, command) })).sort((x, y) => x.distance - y.distance);
  const best = ranked[0];
  if (best === undefined || best.distance > (typed.length <= 3 ? 1 : 2) || ranked[1]?.distance === best.distance) return undefined;
  return best.command;
}

function unknownCommand(command: string): WalletError {
  const suggestion = suggestCommand(command, Object.keys(commandOptions));
  return new WalletError('usage', `unknown command ${JSON.stringify(command)}${suggestion === undefined ? '' : `; did you mean "${suggestion}"?`}`);
}

/** No command at all: the usage on stderr and exit status 2, so a script that lost its arguments fails. */
class NoCommand extends Error {}

/** Which options each command takes; anything else is a usage error. */
const commandOptions: Record<string, readonly string[]> = {
  init: ['server'],
  config: ['server', 'forget-server', 'blocklist-key'],
  'show-key': [],
  create: ['amount', 'currency', 'ttl-hours', 'server', 'offline'],
  publish: ['token', 'server'],
  reissue: ['token', 'server'],
  drop: ['token', 'server'],
  register: ['token', 'server', 'device-id'],
  send: ['token', 'to', 'out', 'format', 'qr', 'image', 'ur-parts'],
  receive: ['in', 'text', 'image', 'server'],
  blocklist: ['server'],
  show: ['token'],
  list: ['server'],
  cancel: ['token', 'server'],
  redeem: ['token', 'pix-key', 'boleto', 'server'],
  backup: ['server', 'passphrase-file'],
  recover: ['server', 'passphrase-file', 'device-id'],
  status: ['token', 'server'],
  balance: ['currency', 'server'],
  fees: ['server', 'consent'],
  vectors: ['in'],
  help: [],
};

/** The usage shown after a usage error: the named command's, else the whole text. */
function usageFor(argv: readonly string[]): string {
  const named = argv.find((arg) => commandOptions[arg] !== undefined && arg !== 'help');
  return (named === undefined ? undefined : commandUsage(named)) ?? usage;
}

type Values = Partial<Record<string, string | boolean>>;

function required(values: Values, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new WalletError('usage', `--${name} is required`);
  return value;
}

function optional(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

async function run(argv: readonly string[]): Promise<string> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        dir: { type: 'string' },
        amount: { type: 'string' },
        currency: { type: 'string' },
        'ttl-hours': { type: 'string' },
        server: { type: 'string' },
        token: { type: 'string' },
        to: { type: 'string' },
        out: { type: 'string' },
        format: { type: 'string' },
        in: { type: 'string' },
        text: { type: 'string' },
        'pix-key': { type: 'string' },
        boleto: { type: 'string' },
        'device-id': { type: 'string' },
        'passphrase-file': { type: 'string' },
        'blocklist-key': { type: 'string' },
        image: { type: 'string' },
        qr: { type: 'boolean' },
        'ur-parts': { type: 'string' },
        offline: { type: 'boolean' },
        consent: { type: 'boolean' },
        'forget-server': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new WalletError('usage', error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  const first = positionals[0];
  if (first === undefined) {
    if (values.help === true) return usage;
    throw new NoCommand();
  }
  // `wallet help CMD` and `wallet CMD --help`: one command's usage.
  const helpFor = first === 'help' ? positionals[1] : values.help === true ? first : undefined;
  if (helpFor !== undefined) {
    if (positionals.length > (first === 'help' ? 2 : 1)) throw new WalletError('usage', `unexpected argument ${JSON.stringify(positionals.at(-1))}`);
    if (helpFor === 'help') return commandUsage('help')!;
    if (commandOptions[helpFor] === undefined) throw unknownCommand(helpFor);
    return commandUsage(helpFor) ?? usage;
  }
  const command = first;
  if (positionals.length > 1) throw new WalletError('usage', `unexpected argument ${JSON.stringify(positionals[1])}`);
  const allowed = commandOptions[command];
  if (allowed === undefined) throw unknownCommand(command);
  for (const name of Object.keys(values)) {
    if (name !== 'dir' && name !== 'help' && !allowed.includes(name)) throw new WalletError('usage', `${command} takes no --${name}`);
  }

  const context: CommandContext = {
    dir: typeof values.dir === 'string' ? values.dir : './.wallet',
    nowMs: () => Date.now(),
    notice: (line) => process.stderr.write(`${line}\n`),
  };

  switch (command) {
    case 'help':
      return usage;
    case 'init':
      return initCommand(context, { server: optional(values, 'server') });
    case 'config':
      return configCommand(context, { server: optional(values, 'server'), forget: values['forget-server'] === true, blocklistKey: optional(values, 'blocklist-key') });
    case 'show-key':
      return showKeyCommand(context);
    case 'create':
      return createCommand(context, {
        amount: required(values, 'amount'),
        currency: required(values, 'currency'),
        ttlHours: required(values, 'ttl-hours'),
        server: optional(values, 'server'),
        offline: values.offline === true,
      });
    case 'publish':
      return publishCommand(context, { token: required(values, 'token'), server: optional(values, 'server') });
    case 'reissue':
      return reissueCommand(context, { token: required(values, 'token'), server: optional(values, 'server') });
    case 'drop':
      return dropCommand(context, { token: required(values, 'token'), server: optional(values, 'server') });
    case 'register':
      return registerCommand(context, { token: required(values, 'token'), server: optional(values, 'server'), deviceId: optional(values, 'device-id') });
    case 'send': {
      const format = optional(values, 'format') ?? 'text';
      if (format !== 'text' && format !== 'json') throw new WalletError('usage', '--format must be text or json');
      return sendCommand(context, {
        token: required(values, 'token'),
        to: required(values, 'to'),
        out: optional(values, 'out'),
        format,
        image: optional(values, 'image'),
        qr: values.qr === true,
        urParts: optional(values, 'ur-parts'),
      });
    }
    case 'receive': {
      const inputs = { file: optional(values, 'in'), text: optional(values, 'text'), image: optional(values, 'image') };
      const given = Object.entries(inputs).filter(([, value]) => value !== undefined);
      if (given.length !== 1) throw new WalletError('usage', 'receive takes exactly one of --in FILE, --text TEXT and --image FILE.png');
      const [kind, value] = given[0] as ['file' | 'text' | 'image', string];
      return receiveCommand(context, {
        input: kind === 'file' ? { file: value } : kind === 'text' ? { text: value } : { image: value },
        server: optional(values, 'server'),
      });
    }
    case 'blocklist':
      return blocklistCommand(context, { server: optional(values, 'server') });
    case 'show':
      return showCommand(context, { token: required(values, 'token') });
    case 'list':
      return listCommand(context, { server: optional(values, 'server') });
    case 'cancel':
      return cancelCommand(context, { token: required(values, 'token'), server: optional(values, 'server') });
    case 'redeem':
      return redeemCommand(context, {
        token: required(values, 'token'),
        pixKey: optional(values, 'pix-key'),
        boleto: optional(values, 'boleto'),
        server: optional(values, 'server'),
      });
    case 'backup':
      return backupCommand(context, { server: required(values, 'server'), passphraseFile: optional(values, 'passphrase-file') });
    case 'recover':
      return recoverCommand(context, {
        server: required(values, 'server'),
        passphraseFile: required(values, 'passphrase-file'),
        deviceId: optional(values, 'device-id'),
      });
    case 'status':
      return statusCommand(context, { token: required(values, 'token'), server: optional(values, 'server') });
    case 'balance':
      return balanceCommand(context, { server: optional(values, 'server'), currency: optional(values, 'currency') });
    case 'fees':
      return feesCommand(context, { server: optional(values, 'server'), consent: values.consent === true });
    case 'vectors':
      return vectorsCommand({ file: optional(values, 'in') });
    default:
      throw unknownCommand(command);
  }
}

try {
  const output = await run(process.argv.slice(2));
  if (output !== '') process.stdout.write(`${output}\n`);
} catch (error) {
  if (error instanceof NoCommand) {
    process.stderr.write(`${usage}\n`);
    process.exitCode = 2;
  } else if (error instanceof WalletError) {
    process.stderr.write(`error [${error.code}]: ${error.message}\n`);
    // A usage error shows the command's own usage when there is one, else the whole text.
    if (error.code === 'usage') {
      process.stderr.write(error.message.startsWith('unknown command') ? 'the commands: wallet help\n' : `\n${usageFor(process.argv.slice(2))}\n`);
    }
    process.exitCode = error.code === 'usage' ? 2 : 1;
  } else if (isProtocolError(error)) {
    process.stderr.write(`error [${error.code}]: ${error.message}\n`);
    process.exitCode = 1;
  } else {
    process.stderr.write(`error [internal]: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  }
}
