# One image for the API, the worker and the gateway simulator; the command picks the process.

# The web console (console/, served by the API at /console) is built here with the dev
# dependencies (Vite, Preact), and only its built files go into the image.
FROM node:24-bookworm-slim AS console
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY vite.console.config.ts ./
COPY scripts/build-console.ts ./scripts/
COPY console ./console
COPY src ./src
RUN node scripts/build-console.ts --required

FROM node:24-bookworm-slim
ENV NODE_ENV=production APP_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
# `npm ci` runs the `prepare` script, which skips the console build without the dev dependencies
# (the console comes from the stage above).
COPY scripts/build-console.ts ./scripts/
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
COPY --from=console /build/console/dist ./console/dist
USER node
EXPOSE 8000
CMD ["node", "api/server.ts"]
