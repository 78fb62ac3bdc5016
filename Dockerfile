# syntax=docker/dockerfile:1
# The hubload image: the load generator `hubload` (the entrypoint) and the reference hub
# `hubload-hub`, built in the Rust image and run as a non-root user on distroless.
#
#   docker build -t hubload .
#   docker run --rm hubload --help
#   docker run --rm -p 9000:9000 --entrypoint hubload-hub hubload --listen 0.0.0.0:9000

FROM rust:1-bookworm AS builder
WORKDIR /src

# Dependencies first, from the manifests and the lock file alone, with stub sources: this
# layer is rebuilt only when Cargo.toml or Cargo.lock change, not on every source edit.
COPY Cargo.toml Cargo.lock ./
COPY hub/Cargo.toml hub/
COPY servicebus/Cargo.toml servicebus/
COPY rng/Cargo.toml rng/
COPY http1/Cargo.toml http1/
# Patched dependencies ([patch.crates-io] in Cargo.toml; vendor/*/PATCHED.md).
COPY vendor/fe2o3-amqp/Cargo.toml vendor/fe2o3-amqp/
COPY vendor/fe2o3-amqp/src vendor/fe2o3-amqp/src
COPY vendor/serde_amqp/Cargo.toml vendor/serde_amqp/
COPY vendor/serde_amqp/src vendor/serde_amqp/src
COPY vendor/h2/Cargo.toml vendor/h2/
COPY vendor/h2/src vendor/h2/src
RUN mkdir -p src hub/src servicebus/src rng/src http1/src \
 && echo 'fn main() {}' > src/main.rs \
 && echo 'fn main() {}' > hub/src/main.rs \
 && touch src/lib.rs hub/src/lib.rs servicebus/src/lib.rs rng/src/lib.rs http1/src/lib.rs \
 && cargo build --release --locked -p hubload -p hubload-hub \
 && rm -rf src hub/src servicebus/src rng/src http1/src

# Then the sources. Touch them: COPY may keep mtimes older than the stub build, and cargo
# would then keep the stub binaries.
COPY src src
COPY hub/src hub/src
COPY servicebus/src servicebus/src
COPY rng/src rng/src
COPY http1/src http1/src
RUN find src hub/src servicebus/src rng/src http1/src -name '*.rs' -exec touch {} + \
 && cargo build --release --locked -p hubload -p hubload-hub \
 && mkdir -p /out \
 && cp target/release/hubload target/release/hubload-hub /out/ \
 && strip /out/hubload /out/hubload-hub

# glibc and libgcc, CA certificates, no shell; user 65532 ("nonroot").
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=builder /out/hubload /out/hubload-hub /usr/local/bin/
COPY profiles/ /etc/hubload/profiles/
# Numeric, so Kubernetes can verify runAsNonRoot without a runAsUser.
USER 65532:65532
WORKDIR /home/nonroot
EXPOSE 9000
ENTRYPOINT ["hubload"]
