# One image for the API, the worker and the gateway simulator; the command picks the process.
FROM node:24-bookworm-slim
ENV NODE_ENV=production APP_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund
COPY . .
USER node
EXPOSE 8000
CMD ["node", "api/server.ts"]
