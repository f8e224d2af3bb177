/**
 * The wallet program's command line: parses the arguments, runs one command, prints its output
 * or its refusal, and sets the exit status. Loaded by bin/wallet.ts once the compile cache is on.
 */
import { parseArgs } from 'node:util';
import { isProtocolError } from '../../src/protocol/index.ts';
import {
  cancelCommand,
  createCommand,
  initCommand,
  listCommand,
  publishCommand,
  receiveCommand,
  registerCommand,
  redeemCommand,
  sendCommand,
  showCommand,
  showKeyCommand,
  type CommandContext,
} from './commands.ts';
import { WalletError } from './errors.ts';

const usage = `usage: wallet [--dir DIR] <command> [options]

  init                                   create this device's key pair (DIR defaults to ./.wallet)
  show-key                               print this wallet's public key and device id
  create --amount 12.34 --currency BRL --ttl-hours 24 [--server URL]
                                         issue and sign a PLC (and register it with the server)
  publish --token ID --server URL        register a PLC this wallet issued whose create --server
                                         failed (asks the server first; never books it twice)
  send --token ID --to PUBKEY [--out FILE] [--format text|json]
                                         sign a transfer; print the PLC2: QR text or write FILE
  receive (--in FILE | --text TEXT)      verify a PLC sent to this wallet and store it
  show --token ID                        print a PLC and its chain
  register --token ID --server URL [--device-id D]
                                         post this wallet's copy of a PLC with its whole chain so
                                         the server learns the offline hops; prints its answer
  list                                   one line per PLC this wallet knows
  cancel --token ID [--server URL]       sign (and post) the issuer's cancel of an untransferred PLC
  redeem --token ID --pix-key KEY [--server URL]
                                         sign (and post) the bearer's redeem to a Pix key
  help                                   this text`;

/** Which options each command takes; anything else is a usage error. */
const commandOptions: Record<string, readonly string[]> = {
  init: [],
  'show-key': [],
  create: ['amount', 'currency', 'ttl-hours', 'server'],
  publish: ['token', 'server'],
  register: ['token', 'server', 'device-id'],
  send: ['token', 'to', 'out', 'format'],
  receive: ['in', 'text'],
  show: ['token'],
  list: [],
  cancel: ['token', 'server'],
  redeem: ['token', 'pix-key', 'server'],
  help: [],
};

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
        'device-id': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    throw new WalletError('usage', error instanceof Error ? error.message : String(error));
  }
  const { values, positionals } = parsed;
  const command = values.help === true ? 'help' : (positionals[0] ?? 'help');
  if (positionals.length > 1) throw new WalletError('usage', `unexpected argument ${JSON.stringify(positionals[1])}`);
  const allowed = commandOptions[command];
  if (allowed === undefined) throw new WalletError('usage', `unknown command ${JSON.stringify(command)}`);
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
      return initCommand(context);
    case 'show-key':
      return showKeyCommand(context);
    case 'create':
      return createCommand(context, {
        amount: required(values, 'amount'),
        currency: required(values, 'currency'),
        ttlHours: required(values, 'ttl-hours'),
        server: optional(values, 'server'),
      });
    case 'publish':
      return publishCommand(context, { token: required(values, 'token'), server: required(values, 'server') });
    case 'register':
      return registerCommand(context, { token: required(values, 'token'), server: required(values, 'server'), deviceId: optional(values, 'device-id') });
    case 'send': {
      const format = optional(values, 'format') ?? 'text';
      if (format !== 'text' && format !== 'json') throw new WalletError('usage', '--format must be text or json');
      return sendCommand(context, { token: required(values, 'token'), to: required(values, 'to'), out: optional(values, 'out'), format });
    }
    case 'receive': {
      const file = optional(values, 'in');
      const text = optional(values, 'text');
      if ((file === undefined) === (text === undefined)) throw new WalletError('usage', 'receive takes exactly one of --in FILE and --text TEXT');
      return receiveCommand(context, { input: file !== undefined ? { file } : { text: text as string } });
    }
    case 'show':
      return showCommand(context, { token: required(values, 'token') });
    case 'list':
      return listCommand(context);
    case 'cancel':
      return cancelCommand(context, { token: required(values, 'token'), server: optional(values, 'server') });
    case 'redeem':
      return redeemCommand(context, { token: required(values, 'token'), pixKey: required(values, 'pix-key'), server: optional(values, 'server') });
    default:
      throw new WalletError('usage', `unknown command ${JSON.stringify(command)}`);
  }
}

try {
  const output = await run(process.argv.slice(2));
  if (output !== '') process.stdout.write(`${output}\n`);
} catch (error) {
  if (error instanceof WalletError) {
    process.stderr.write(`error [${error.code}]: ${error.message}\n`);
    if (error.code === 'usage') process.stderr.write(`\n${usage}\n`);
    process.exitCode = error.code === 'usage' ? 2 : 1;
  } else if (isProtocolError(error)) {
    process.stderr.write(`error [${error.code}]: ${error.message}\n`);
    process.exitCode = 1;
  } else {
    process.stderr.write(`error [internal]: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  }
}
