# seren-corpus-callosum in a container. deploy/README.md says how to build and run it.
#
#   docker build -t seren-corpus-callosum .
#   docker run -d --name scc -p 7423:7423 \
#     -e SEREN_SCC_BEARER_TOKEN="$(openssl rand -hex 32)" \
#     -v scc-state:/var/lib/seren-corpus-callosum \
#     -v "$PWD/seren-corpus-callosum.yaml:/etc/seren-corpus-callosum/seren-corpus-callosum.yaml:ro" \
#     seren-corpus-callosum
#
# It binds 0.0.0.0, so it needs a token: without one it refuses to start (exit 78).

FROM rust:1.95-bookworm AS build
WORKDIR /src
# .dockerignore keeps target/, .git/ and the test suites out of the context.
COPY . .
# The same command as .ci/run's release build; tests/deploy/run.sh checks that the two match.
RUN cargo build --release --locked

FROM debian:bookworm-slim
# ca-certificates: stores over https are checked against the system's roots too.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
RUN groupadd --system --gid 10001 scc \
 && useradd --system --uid 10001 --gid 10001 --no-create-home \
      --home-dir /var/lib/seren-corpus-callosum --shell /usr/sbin/nologin scc \
 && install -d -o 10001 -g 10001 -m 0700 /var/lib/seren-corpus-callosum \
 && install -d -m 0755 /etc/seren-corpus-callosum
COPY --from=build /src/target/release/seren-corpus-callosum /usr/local/bin/seren-corpus-callosum
COPY LICENSE /usr/share/doc/seren-corpus-callosum/LICENSE

# The config is read from this path (mount yours there; none means no stores until you add some).
# Stores added at run time go to the overlay in /var/lib/seren-corpus-callosum: mount a volume
# there to keep them. A fresh named volume takes the directory's owner, uid 10001.
ENV SEREN_SCC_HOST=0.0.0.0 \
    SEREN_SCC_CONFIG=/etc/seren-corpus-callosum/seren-corpus-callosum.yaml \
    SEREN_SCC_RUNTIME_STORES=/var/lib/seren-corpus-callosum/runtime-stores.json
USER 10001
WORKDIR /var/lib/seren-corpus-callosum
EXPOSE 7423
# On SIGTERM it stops accepting, drains open requests for at most 10 s, then exits 0. Docker's
# default stop timeout is 10 s: use `docker stop -t 15` (or `stop_grace_period: 15s`) to let it drain.
STOPSIGNAL SIGTERM
# No HEALTHCHECK: the image has no curl or wget, and the binary has no command that asks a running
# server for its health (`check` validates the config and probes the stores instead). Probe
# GET /health from outside (it needs no token): Kubernetes does, see deploy/kubernetes.
LABEL org.opencontainers.image.title="seren-corpus-callosum" \
      org.opencontainers.image.source="https://github.com/seren/seren-corpus-callosum" \
      org.opencontainers.image.licenses="GPL-3.0-or-later"
ENTRYPOINT ["/usr/local/bin/seren-corpus-callosum"]
CMD ["serve"]
