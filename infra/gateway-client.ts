import { createGatewayClient, type GatewayClient, type GatewayClientOptions } from '../gateway/index.ts';
import { gatewayBaseUrl, type Config } from './config.ts';
import type { ServiceMetrics } from './metrics.ts';

/** The gateway client a process runs with: the configured gateway, each call told to the process's metrics when it has them. */
export function configuredGatewayClient(config: Config, metrics: ServiceMetrics | null, fetch?: GatewayClientOptions['fetch']): GatewayClient {
  return createGatewayClient({
    baseUrl: gatewayBaseUrl(config),
    apiKey: config.GATEWAY_API_KEY,
    timeoutMs: config.GATEWAY_TIMEOUT_MS,
    ...(fetch === undefined ? {} : { fetch }),
    ...(metrics === null ? {} : { observe: metrics.observeGatewayCall }),
  });
}
