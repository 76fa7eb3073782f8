# syntax=docker/dockerfile:1
# One image for every Almanac role; the role is the script node runs:
#   docker run IMAGE                                  # api (the default)
#   docker run IMAGE dist/apps/worker/src/main.js     # promoter | dispatcher | worker likewise
#   docker run IMAGE scripts/migrate.js               # apply migrations and exit
# Kubernetes sets `args` the same way (k8s/base, k8s/worker).

ARG NODE_IMAGE=node:24-bookworm-slim

# --- build: full dependencies, compile apps and libs to dist/ -----------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json .swcrc nest-cli.json ./
COPY apps ./apps
COPY libs ./libs
COPY examples ./examples
RUN npm run build

# --- runtime: production dependencies and the compiled code only --------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY scripts ./scripts
# The node image's unprivileged user, by number so Kubernetes' runAsNonRoot can verify it.
USER 1000:1000
EXPOSE 3000
ENTRYPOINT ["node"]
CMD ["dist/apps/api/src/main.js"]
