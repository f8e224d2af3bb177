# One image for the API, the worker and the gateway simulator; the command picks the process.

# The web console (console/, served by the API at /console) and the browser wallet (wallet/,
# served at /wallet/; docs/wallet.md) are built here with the dev dependencies (Vite, Preact),
# and only their built files go into the image.
FROM node:24-bookworm-slim AS console
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY vite.console.config.ts vite.wallet.config.ts ./
COPY scripts/build-console.ts scripts/build-wallet.ts ./scripts/
COPY console ./console
COPY wallet ./wallet
COPY src ./src
RUN node scripts/build-console.ts --required && node scripts/build-wallet.ts --required

FROM node:24-bookworm-slim
ENV NODE_ENV=production APP_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# `npm ci` runs the `prepare` script, which skips the console and wallet builds without the dev
# dependencies (both come from the stage above).
COPY scripts/build-console.ts scripts/build-wallet.ts ./scripts/
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
COPY --from=console /build/console/dist ./console/dist
COPY --from=console /build/wallet/dist ./wallet/dist
USER node
EXPOSE 8000
CMD ["node", "api/server.ts"]
